-- Sessions at a glance (package board): what each person last saw of each
-- session, for the unread marker, and a notification whenever a session's
-- place on a sidebar or board may have changed: its status, title or
-- archiving, its asks opening or closing, its creation or deletion.
-- NOTIFY carries ids only ("project_id session_id"); every replica reads
-- the rows its viewers may see.
CREATE TABLE session_reads (
    user_id    bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    session_id uuid NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq        bigint NOT NULL DEFAULT 0,
    read_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, session_id)
);
CREATE INDEX session_reads_session_idx ON session_reads (session_id);

CREATE FUNCTION parley_sessions_notify() RETURNS trigger
    LANGUAGE plpgsql
AS $$
DECLARE
    r record;
BEGIN
    IF TG_OP = 'DELETE' THEN r := OLD; ELSE r := NEW; END IF;
    PERFORM pg_notify('parley_sessions', r.project_id::text || ' ' || r.id::text);
    RETURN NULL;
END
$$;

CREATE TRIGGER sessions_board_notify AFTER INSERT OR DELETE ON sessions
    FOR EACH ROW EXECUTE FUNCTION parley_sessions_notify();
CREATE TRIGGER sessions_board_notify_update AFTER UPDATE ON sessions
    FOR EACH ROW
    WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.title IS DISTINCT FROM NEW.title
          OR OLD.archived_at IS DISTINCT FROM NEW.archived_at)
    EXECUTE FUNCTION parley_sessions_notify();

CREATE FUNCTION parley_inputs_notify() RETURNS trigger
    LANGUAGE plpgsql
AS $$
DECLARE
    p bigint;
BEGIN
    SELECT project_id INTO p FROM sessions WHERE id = NEW.session_id;
    IF FOUND THEN
        PERFORM pg_notify('parley_sessions', p::text || ' ' || NEW.session_id::text);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER inputs_board_notify AFTER INSERT OR UPDATE OF status ON inputs
    FOR EACH ROW EXECUTE FUNCTION parley_inputs_notify();
