-- The audit trail (issue 31): one append-only log of who did what, from
-- where. Each row's hash chains it to the row before (package audit), so
-- an edited or removed row breaks the chain that `parley audit verify`
-- walks. Nothing here references other tables: a row outlives the user,
-- project or session it names.
CREATE TABLE audit_log (
    id         bigserial PRIMARY KEY,
    at         timestamptz NOT NULL,
    actor_id   bigint,
    actor_name text NOT NULL DEFAULT '',
    source     text NOT NULL DEFAULT '',   -- the client address ("from")
    surface    text NOT NULL,
    action     text NOT NULL,
    project_id bigint,
    session_id text,
    target     text NOT NULL DEFAULT '',
    detail     jsonb NOT NULL DEFAULT '{}',
    prev_hash  bytea NOT NULL,
    hash       bytea NOT NULL
);
CREATE INDEX audit_log_project_idx ON audit_log (project_id, id);
CREATE INDEX audit_log_at_idx ON audit_log (at);

-- Append-only for Parley's own role: rows are never updated or deleted.
-- The owner of the table can still disable the trigger, which is why the
-- hash chain, not this trigger, is the tamper evidence.
CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit_log is append-only: % refused', TG_OP;
END;
$$;
CREATE TRIGGER audit_log_no_update BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only();
