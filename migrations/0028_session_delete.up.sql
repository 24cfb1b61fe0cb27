-- Deleting sessions (issue 32, item 5). A deleted session's rows go with
-- it (every table that names a session cascades from sessions, or from
-- inputs and runs, which do); what stays is a tombstone, so a page still
-- open on it, or a second delete, can say what happened, and a cleanup
-- that did not finish (git refused, the server stopped) is finished by
-- the next delete or sweep.
CREATE TABLE deleted_sessions (
    id                uuid PRIMARY KEY,
    project_id        bigint NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    claude_session_id uuid NOT NULL,
    title             text NOT NULL DEFAULT '',
    branch            text NOT NULL DEFAULT '',
    deleted_by        text NOT NULL DEFAULT '',
    reason            text NOT NULL CHECK (reason IN ('owner', 'retention')),
    deleted_at        timestamptz NOT NULL DEFAULT now(),
    cleaned_at        timestamptz
);
CREATE INDEX deleted_sessions_unclean_idx ON deleted_sessions (deleted_at) WHERE cleaned_at IS NULL;

-- Retention: a project's sessions idle for more than idle_days are
-- deleted by the sweeper. No row: off (the default).
CREATE TABLE project_retention (
    project_id bigint PRIMARY KEY REFERENCES projects (id) ON DELETE CASCADE,
    idle_days  integer NOT NULL CHECK (idle_days BETWEEN 1 AND 3650),
    updated_at timestamptz NOT NULL DEFAULT now()
);
