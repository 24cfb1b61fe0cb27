ALTER TABLE projects DROP COLUMN run_tasks, DROP COLUMN run_memory, DROP COLUMN run_cpu_weight, DROP COLUMN disk_quota;
