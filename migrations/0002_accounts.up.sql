-- Accounts, sign-in sessions, login throttling, project membership and the
-- per-project Claude options.

CREATE TABLE users (
    id            bigserial PRIMARY KEY,
    email         text NOT NULL CHECK (email <> ''),
    name          text NOT NULL DEFAULT '',
    password_hash text NOT NULL,
    is_admin      boolean NOT NULL DEFAULT false,
    created_at    timestamptz NOT NULL DEFAULT now()
);

CREATE UNIQUE INDEX users_email_idx ON users (lower(email));

-- A browser's sign-in. The cookie holds a random token; only its SHA-256 is
-- stored, so a leaked table does not let anyone sign in. Revoked or expired
-- rows are refused and swept.
CREATE TABLE auth_sessions (
    token_hash   bytea PRIMARY KEY,
    user_id      bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    csrf_token   text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL,
    revoked_at   timestamptz,
    ip           text NOT NULL DEFAULT '',
    user_agent   text NOT NULL DEFAULT ''
);

CREATE INDEX auth_sessions_user_idx ON auth_sessions (user_id);

-- Failed sign-ins per email and client address, for throttling. In Postgres
-- so every replica sees the same counts.
CREATE TABLE login_failures (
    email        text NOT NULL,
    ip           text NOT NULL,
    failures     integer NOT NULL DEFAULT 0,
    first_at     timestamptz NOT NULL DEFAULT now(),
    locked_until timestamptz,
    PRIMARY KEY (email, ip)
);

CREATE TABLE project_members (
    project_id bigint NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    user_id    bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    role       text NOT NULL CHECK (role IN ('owner', 'member', 'viewer')),
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (project_id, user_id)
);

CREATE INDEX project_members_user_idx ON project_members (user_id);

-- workspace (from 0001) stays: '' = the managed directory named by the
-- project's id; an admin may set an existing directory instead.
ALTER TABLE projects
    ADD COLUMN model                text NOT NULL DEFAULT '',
    ADD COLUMN permission_mode      text NOT NULL DEFAULT 'default'
        CHECK (permission_mode IN ('default', 'acceptEdits', 'plan', 'bypassPermissions')),
    ADD COLUMN allowed_tools        text[] NOT NULL DEFAULT '{}',
    ADD COLUMN disallowed_tools     text[] NOT NULL DEFAULT '{}',
    ADD COLUMN append_system_prompt text NOT NULL DEFAULT '',
    ADD COLUMN max_turns            integer NOT NULL DEFAULT 0 CHECK (max_turns >= 0),
    ADD COLUMN ask_user_enabled     boolean NOT NULL DEFAULT true,
    -- 0 = the server-wide default.
    ADD COLUMN ask_timeout_seconds  integer NOT NULL DEFAULT 0
        CHECK (ask_timeout_seconds = 0 OR ask_timeout_seconds BETWEEN 30 AND 900),
    -- Permission, plan and AskUserQuestion asks: 0 = wait without a deadline.
    ADD COLUMN permission_timeout_seconds integer NOT NULL DEFAULT 0
        CHECK (permission_timeout_seconds >= 0),
    ADD COLUMN instructions         text NOT NULL DEFAULT '',
    ADD COLUMN archived_at          timestamptz,
    ADD COLUMN updated_at           timestamptz NOT NULL DEFAULT now();

-- created_by keeps the starter's display name as it was; the id follows the
-- account (and is cleared when the account is removed).
ALTER TABLE sessions ADD COLUMN created_by_user_id bigint REFERENCES users (id) ON DELETE SET NULL;
