-- Prompts and answers that wait in line for a free claude slot are kept
-- here until their run has them, so a restart, a crash or a shutdown with
-- no other replica loses none. replica_id is the replica that serves the
-- row; '' once released (by a drain that handed its session over, or for
-- a later try). A row whose replica is gone (or '') is claimed by a replica
-- that leases its session (at start, on a heartbeat, or on the session's
-- next message), which sends it on in order (id). A prompt's event names
-- its row (payload->>'line'): a row whose prompt was recorded as sent
-- before a crash is dropped, not sent twice.
CREATE TABLE session_line (
    id         bigserial PRIMARY KEY,
    session_id uuid NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    replica_id text NOT NULL,
    kind       text NOT NULL CHECK (kind IN ('prompt', 'answer')),
    text       text NOT NULL DEFAULT '',
    by_name    text NOT NULL DEFAULT '',
    by_id      bigint NOT NULL DEFAULT 0, -- the prompt's author (users.id)
    input_id   text NOT NULL DEFAULT '',
    response   jsonb,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX session_line_session_idx ON session_line (session_id, id);
