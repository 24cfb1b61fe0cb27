-- Model usage per project and day, counted by Parley's model gateway.
CREATE TABLE project_usage (
    project_id    bigint NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    day           date   NOT NULL DEFAULT current_date,
    requests      bigint NOT NULL DEFAULT 0,
    input_tokens  bigint NOT NULL DEFAULT 0,
    output_tokens bigint NOT NULL DEFAULT 0,
    limited       bigint NOT NULL DEFAULT 0, -- requests refused by a rate limit
    PRIMARY KEY (project_id, day)
);
