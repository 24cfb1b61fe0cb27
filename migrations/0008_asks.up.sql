-- Asks that are never forgotten: per-project ask settings, kept in their own
-- table so the projects row stays as it is.
CREATE TABLE project_ask_settings (
    project_id              bigint PRIMARY KEY REFERENCES projects (id) ON DELETE CASCADE,
    -- A detached ask (its process gone) that nobody answers expires after this many days.
    expiry_days             integer NOT NULL DEFAULT 7 CHECK (expiry_days BETWEEN 1 AND 365),
    -- The longest wait the model may choose for one ask_user call; 0 = the project's ask timeout.
    max_ask_timeout_seconds integer NOT NULL DEFAULT 0 CHECK (max_ask_timeout_seconds BETWEEN 0 AND 86400)
);

-- The expiry sweep reads pending asks by age.
CREATE INDEX inputs_pending_age_idx ON inputs (created_at) WHERE status = 'pending';
