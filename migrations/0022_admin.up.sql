-- Web administration (issue 31): deactivated accounts and single-use links
-- (invitations and password resets).

-- A deactivated account keeps its rows (turns, answers, audit) but signs in
-- nowhere: its sign-ins and API tokens are refused while this is set.
ALTER TABLE users ADD COLUMN deactivated_at timestamptz;

-- A link e-mailed or handed to one person: an invitation to make an account
-- (kind 'invite', for email, optionally into a project with a role) or a
-- password reset (kind 'reset', for user_id). Only the SHA-256 of the
-- link's token is stored; a link works once (used_at) and until expires_at.
CREATE TABLE account_links (
    token_hash bytea PRIMARY KEY,
    kind       text NOT NULL CHECK (kind IN ('invite', 'reset')),
    email      text NOT NULL,
    user_id    bigint REFERENCES users (id) ON DELETE CASCADE,
    admin      boolean NOT NULL DEFAULT false,
    project_id bigint REFERENCES projects (id) ON DELETE CASCADE,
    role       text CHECK (role IN ('owner', 'member', 'viewer')),
    created_by bigint REFERENCES users (id) ON DELETE SET NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    used_at    timestamptz,
    CHECK (kind = 'invite' OR user_id IS NOT NULL)
);

CREATE INDEX account_links_email_idx ON account_links (lower(email));
