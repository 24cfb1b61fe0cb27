-- Parley as an MCP server: per-user API tokens, the MCP options of a
-- project, and the Claude options a session was created with over MCP.

-- A user's API token for /mcp and `parley mcp`. Only its SHA-256 is stored;
-- the token itself is shown once, when it is made.
CREATE TABLE api_tokens (
    id           bigserial PRIMARY KEY,
    user_id      bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name         text NOT NULL DEFAULT '',
    token_hash   bytea NOT NULL UNIQUE,
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    revoked_at   timestamptz
);

CREATE INDEX api_tokens_user_idx ON api_tokens (user_id);

-- What members of a project may choose in create_session, and how the
-- project's runs reach ask_user. No row = the defaults.
CREATE TABLE project_mcp_settings (
    project_id              bigint PRIMARY KEY REFERENCES projects (id) ON DELETE CASCADE,
    -- Permission modes a member (not an owner) may pass; bypassPermissions
    -- only when an owner adds it.
    member_permission_modes text[] NOT NULL DEFAULT '{default,acceptEdits,plan}',
    -- stdio: a `parley mcp-askuser` child per run; http: Parley's own
    -- streamable HTTP endpoint on the relay listener.
    ask_transport           text NOT NULL DEFAULT 'stdio' CHECK (ask_transport IN ('stdio', 'http'))
);

-- The Claude options a session was created with (create_session), applied
-- on top of the project's on every run of the session.
CREATE TABLE session_options (
    session_id uuid PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    options    jsonb NOT NULL DEFAULT '{}'
);
