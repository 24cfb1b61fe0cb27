-- Images and files attached to a prompt (package attach). An upload is
-- kept here once, pending, until the message that names it is sent; the
-- prompt event then refers to it by id, so the event log that every page
-- replays holds no image bytes. A file's bytes are dropped once it is
-- saved into the project's files (path says where).
CREATE TABLE attachments (
    id          text PRIMARY KEY,
    session_id  uuid NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    user_id     bigint NOT NULL,
    kind        text NOT NULL CHECK (kind IN ('image', 'file')),
    media_type  text NOT NULL,
    name        text NOT NULL,
    size        bigint NOT NULL,
    data        bytea,
    path        text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now(),
    sent_at     timestamptz
);
CREATE INDEX attachments_pending ON attachments (session_id, user_id) WHERE sent_at IS NULL;
