-- What the model gateway charged: every model request a run makes (the
-- CLI's and its tools' alike) priced from its usage. A session's and a
-- project's spending is the larger of this and what the CLI reported
-- (sessions.total_cost_usd, turn_costs), so neither can be skipped and
-- nothing is counted twice.
ALTER TABLE sessions ADD COLUMN model_cost_usd double precision NOT NULL DEFAULT 0 CHECK (model_cost_usd >= 0);

CREATE TABLE project_model_costs (
    project_id bigint NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    day        date   NOT NULL, -- UTC
    cost_usd   double precision NOT NULL DEFAULT 0 CHECK (cost_usd >= 0),
    PRIMARY KEY (project_id, day)
);
