DROP TABLE turn_costs;
ALTER TABLE sessions DROP COLUMN worktree_branch, DROP COLUMN worktree_base, DROP COLUMN worktree_state;
ALTER TABLE sessions DROP CONSTRAINT sessions_status_check;
UPDATE sessions SET status = CASE status
    WHEN 'error' THEN 'failed'
    WHEN 'completed' THEN 'idle'
    WHEN 'interrupted' THEN 'idle'
    ELSE status END;
ALTER TABLE sessions ADD CONSTRAINT sessions_status_check
    CHECK (status IN ('idle', 'running', 'waiting', 'ended', 'failed'));
ALTER TABLE projects DROP COLUMN session_budget_usd, DROP COLUMN daily_budget_usd, DROP COLUMN stall_seconds;
