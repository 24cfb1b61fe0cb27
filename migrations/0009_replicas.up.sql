-- Replicas: several `parley serve` processes on one database. Each replica
-- keeps a row alive while it runs; a session's runs belong to the replica
-- holding its lease, and a lease is live exactly while its replica's row is.

CREATE TABLE replicas (
    id         text PRIMARY KEY,
    data_dir   text NOT NULL DEFAULT '',
    started_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL
);

CREATE TABLE session_leases (
    session_id  uuid PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    replica_id  text NOT NULL,
    acquired_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX session_leases_replica_idx ON session_leases (replica_id);

-- Which replica a run's process lives on; NULL for runs from before replicas.
ALTER TABLE runs ADD COLUMN replica_id text;

-- A prompt, answer or stop sent to a replica that does not own the session,
-- for the owner to carry out. NOTIFY carries only the id.
CREATE TABLE cluster_requests (
    id         bigserial PRIMARY KEY,
    replica_id text NOT NULL,
    session_id uuid NOT NULL,
    kind       text NOT NULL,
    payload    jsonb NOT NULL DEFAULT '{}',
    taken_at   timestamptz,
    done_at    timestamptz,
    error      text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now()
);

-- Every insert into the log tells the replicas which seqs of which session
-- are new, once per statement (a batch is one notification), on commit.
-- The payload is "session_id first_seq last_seq application_name": readers
-- fetch the events from the log, and the writer skips its own.
CREATE FUNCTION parley_events_notify() RETURNS trigger
    LANGUAGE plpgsql
AS $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT session_id, min(seq) AS first, max(seq) AS last FROM new_events GROUP BY session_id LOOP
        PERFORM pg_notify('parley_events', r.session_id::text || ' ' || r.first || ' ' || r.last || ' ' ||
            coalesce(current_setting('application_name', true), ''));
    END LOOP;
    RETURN NULL;
END
$$;

CREATE TRIGGER events_notify AFTER INSERT ON events
    REFERENCING NEW TABLE AS new_events
    FOR EACH STATEMENT EXECUTE FUNCTION parley_events_notify();
