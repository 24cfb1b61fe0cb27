-- Reach (issue 30): asks reach people where they are.

-- The installation's VAPID key pair (Web Push), made once and shared by
-- every replica.
CREATE TABLE reach_keys (
    id            boolean PRIMARY KEY DEFAULT true CHECK (id),
    vapid_public  text NOT NULL,
    vapid_private text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now()
);

-- A person's devices that receive Web Push (a browser's PushSubscription).
CREATE TABLE push_devices (
    id           bigserial PRIMARY KEY,
    user_id      bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    endpoint     text NOT NULL UNIQUE,
    p256dh       text NOT NULL,
    auth         text NOT NULL,
    name         text NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    last_outcome text NOT NULL DEFAULT ''
);
CREATE INDEX push_devices_user_idx ON push_devices (user_id);

-- A person's own rules: quiet hours (local times in tz; equal = none) and
-- e-mail for asks.
CREATE TABLE user_reach (
    user_id    bigint PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    quiet_from text NOT NULL DEFAULT '' CHECK (quiet_from = '' OR quiet_from ~ '^[0-2][0-9]:[0-5][0-9]$'),
    quiet_to   text NOT NULL DEFAULT '' CHECK (quiet_to = '' OR quiet_to ~ '^[0-2][0-9]:[0-5][0-9]$'),
    tz         text NOT NULL DEFAULT 'UTC',
    email_asks boolean NOT NULL DEFAULT false
);

-- A project's routing, escalation and chat connections.
CREATE TABLE project_reach (
    project_id       bigint PRIMARY KEY REFERENCES projects (id) ON DELETE CASCADE,
    first_reach      text NOT NULL DEFAULT 'starter' CHECK (first_reach IN ('starter', 'all', 'named')),
    named            bigint[] NOT NULL DEFAULT '{}',
    escalate_after   integer NOT NULL DEFAULT 120 CHECK (escalate_after >= 0),
    slack_token      text NOT NULL DEFAULT '',
    slack_secret     text NOT NULL DEFAULT '',
    slack_channel    text NOT NULL DEFAULT '',
    webhook_url      text NOT NULL DEFAULT '',
    webhook_secret   text NOT NULL DEFAULT ''
);

-- Who is looking: a page (session or inbox) reported visible, by socket.
-- A report older than 45 s counts for nothing.
CREATE TABLE reach_looking (
    conn_id    text PRIMARY KEY,
    user_id    bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    project_id bigint NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    session_id uuid REFERENCES sessions (id) ON DELETE CASCADE, -- NULL: the inbox
    seen_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX reach_looking_project_idx ON reach_looking (project_id);

-- The stages of an ask's reach a replica has claimed (1: the first
-- people, 2: the escalation; 0: chat channels), so each runs once.
CREATE TABLE reach_stages (
    input_id uuid NOT NULL REFERENCES inputs (id) ON DELETE CASCADE,
    stage    smallint NOT NULL,
    at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (input_id, stage)
);

-- Each delivery of an ask and its outcome.
CREATE TABLE reach_deliveries (
    id       bigserial PRIMARY KEY,
    input_id uuid NOT NULL REFERENCES inputs (id) ON DELETE CASCADE,
    user_id  bigint REFERENCES users (id) ON DELETE SET NULL,
    channel  text NOT NULL CHECK (channel IN ('push', 'slack', 'webhook', 'email')),
    target   text NOT NULL DEFAULT '',
    outcome  text NOT NULL CHECK (outcome IN ('sent', 'suppressed', 'no_device', 'failed', 'expired', 'quiet')),
    detail   text NOT NULL DEFAULT '',
    ref      text NOT NULL DEFAULT '', -- push: device id; slack: channel/ts
    at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX reach_deliveries_input_idx ON reach_deliveries (input_id, at);

-- Single-use answer tokens: only the SHA-256 is stored.
CREATE TABLE answer_tokens (
    hash       bytea PRIMARY KEY,
    input_id   uuid NOT NULL REFERENCES inputs (id) ON DELETE CASCADE,
    user_id    bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    via        text NOT NULL DEFAULT '',
    expires_at timestamptz NOT NULL,
    used_at    timestamptz
);
CREATE INDEX answer_tokens_input_idx ON answer_tokens (input_id);
