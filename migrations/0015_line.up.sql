-- Prompts and answers that wait in line for a free claude slot are kept
-- here until their run has them, so a restart, a crash or a shutdown with
-- no other replica loses none. replica_id is the replica that serves the
-- row; '' when a replica that shut down released it. A row whose replica
-- is gone (or '') is taken by the next replica to lease its session, which
-- sends it to Claude in order (id). A prompt's event names its row
-- (payload->>'line'), so a row Claude already had is never sent twice.
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
