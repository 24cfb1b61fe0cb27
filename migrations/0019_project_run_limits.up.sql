-- What a project's runs may hold, set on its settings page: tasks,
-- memory and CPU weight of the project's cgroup (all its runs together)
-- and the disk its files may take. 0 = the server's value
-- (PARLEY_RUN_TASKS, PARLEY_RUN_MEMORY, PARLEY_RUN_CPU_WEIGHT,
-- PARLEY_PROJECT_DISK).
ALTER TABLE projects
    ADD COLUMN run_tasks      integer NOT NULL DEFAULT 0 CHECK (run_tasks >= 0),
    ADD COLUMN run_memory     bigint  NOT NULL DEFAULT 0 CHECK (run_memory >= 0),
    ADD COLUMN run_cpu_weight integer NOT NULL DEFAULT 0 CHECK (run_cpu_weight BETWEEN 0 AND 10000),
    ADD COLUMN disk_quota     bigint  NOT NULL DEFAULT 0 CHECK (disk_quota >= 0);
