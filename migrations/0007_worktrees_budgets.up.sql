-- Per-session git worktrees, spending limits, the stall watchdog, and the
-- session statuses that say how the last turn or process ended.

-- 0 = no limit / the server's default.
ALTER TABLE projects
    ADD COLUMN session_budget_usd double precision NOT NULL DEFAULT 0 CHECK (session_budget_usd >= 0),
    ADD COLUMN daily_budget_usd   double precision NOT NULL DEFAULT 0 CHECK (daily_budget_usd >= 0),
    ADD COLUMN stall_seconds      integer NOT NULL DEFAULT 0 CHECK (stall_seconds >= 0);

-- idle: never run; running, waiting: a turn or an ask is open; completed,
-- interrupted, error: how the last turn ended; ended: the process ended
-- (the next message resumes the session). 'failed' becomes 'error'.
ALTER TABLE sessions DROP CONSTRAINT sessions_status_check;
UPDATE sessions SET status = 'error' WHERE status = 'failed';
ALTER TABLE sessions ADD CONSTRAINT sessions_status_check
    CHECK (status IN ('idle', 'running', 'waiting', 'completed', 'interrupted', 'error', 'ended'));

-- The session's worktree: branch parley/<session id> made from base at the
-- first run; state says what a member last did with it.
ALTER TABLE sessions
    ADD COLUMN worktree_branch text NOT NULL DEFAULT '',
    ADD COLUMN worktree_base   text NOT NULL DEFAULT '',
    ADD COLUMN worktree_state  text NOT NULL DEFAULT ''
        CHECK (worktree_state IN ('', 'active', 'merged', 'discarded'));

-- What each turn cost, when: a project's spending today is a sum over it.
-- A deleted session's spending still counts for the day.
CREATE TABLE turn_costs (
    id         bigserial PRIMARY KEY,
    project_id bigint NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    session_id uuid REFERENCES sessions (id) ON DELETE SET NULL,
    cost_usd   double precision NOT NULL CHECK (cost_usd >= 0),
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX turn_costs_project_day_idx ON turn_costs (project_id, created_at);
