-- OpenID Connect sign-in (issue 31, package oidclogin).

-- The provider's person behind an account (issuer + subject), and whether
-- the admin flag came from the provider's admin group (then the group
-- takes it away again; an admin made by hand keeps it).
CREATE TABLE oidc_identities (
    user_id       bigint PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    issuer        text NOT NULL,
    subject       text NOT NULL,
    admin_granted boolean NOT NULL DEFAULT false,
    UNIQUE (issuer, subject)
);

-- Project roles the provider's groups granted: only these are changed or
-- removed when the groups change (a membership an owner gave by hand stays).
CREATE TABLE oidc_grants (
    user_id    bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    project_id bigint NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    role       text NOT NULL CHECK (role IN ('owner', 'member', 'viewer')),
    PRIMARY KEY (user_id, project_id)
);

-- A sign-in made through the provider: its refresh token and what the
-- groups granted when it was last checked. A sign-in is re-checked with
-- the provider when checked_at is older than PARLEY_OIDC_REFRESH; it ends
-- when the check fails or takes something away. The row goes with its
-- sign-in.
CREATE TABLE oidc_sessions (
    token_hash    bytea PRIMARY KEY REFERENCES auth_sessions (token_hash) ON DELETE CASCADE,
    user_id       bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    refresh_token text NOT NULL DEFAULT '',
    granted       text NOT NULL DEFAULT '',
    checked_at    timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX oidc_sessions_checked_idx ON oidc_sessions (checked_at);
