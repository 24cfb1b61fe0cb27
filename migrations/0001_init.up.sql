CREATE TABLE projects (
    id         bigserial PRIMARY KEY,
    name       text NOT NULL,
    workspace  text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE sessions (
    id                uuid PRIMARY KEY,
    project_id        bigint NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    claude_session_id uuid NOT NULL,
    title             text NOT NULL DEFAULT '',
    status            text NOT NULL DEFAULT 'idle'
        CHECK (status IN ('idle', 'running', 'waiting', 'ended', 'failed')),
    claude_started    boolean NOT NULL DEFAULT false,
    total_cost_usd    double precision NOT NULL DEFAULT 0 CHECK (total_cost_usd >= 0),
    num_turns         integer NOT NULL DEFAULT 0 CHECK (num_turns >= 0),
    created_by        text NOT NULL DEFAULT '',
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX sessions_project_updated_idx ON sessions (project_id, updated_at DESC);

CREATE TABLE runs (
    id         bigserial PRIMARY KEY,
    session_id uuid NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    pid        integer NOT NULL,
    started_at timestamptz NOT NULL DEFAULT now(),
    ended_at   timestamptz,
    exit_code  integer,
    reason     text NOT NULL DEFAULT ''
);

CREATE INDEX runs_session_idx ON runs (session_id);
CREATE INDEX runs_open_idx ON runs (session_id) WHERE ended_at IS NULL;

CREATE TABLE events (
    session_id uuid NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq        bigint NOT NULL CHECK (seq > 0),
    type       text NOT NULL,
    payload    jsonb NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (session_id, seq)
);

CREATE TABLE inputs (
    id          uuid PRIMARY KEY,
    session_id  uuid NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    run_id      bigint REFERENCES runs (id) ON DELETE SET NULL,
    kind        text NOT NULL CHECK (kind IN ('question', 'permission', 'plan')),
    payload     jsonb NOT NULL DEFAULT '{}',
    status      text NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'answered', 'denied', 'timed_out', 'cancelled', 'expired')),
    answer      jsonb,
    answered_by text,
    answered_at timestamptz,
    deadline    timestamptz,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX inputs_session_idx ON inputs (session_id, created_at);
CREATE INDEX inputs_pending_idx ON inputs (session_id, created_at) WHERE status = 'pending';
