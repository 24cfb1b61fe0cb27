-- History: archive sessions, and search titles and transcripts with
-- PostgreSQL full-text search.

ALTER TABLE sessions ADD COLUMN archived_at timestamptz;

CREATE INDEX sessions_title_search_idx ON sessions USING gin (to_tsvector('english', title));

-- event_text is the searchable text of an event: a member's prompt, or the
-- text blocks of an assistant message. Every other event has none. It must
-- never fail, since it runs on every insert into events.
CREATE FUNCTION event_text(kind text, payload jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE
        WHEN kind = 'prompt' AND jsonb_typeof(payload -> 'text') = 'string' THEN payload ->> 'text'
        WHEN kind = 'assistant' AND jsonb_typeof(payload -> 'message' -> 'content') = 'array' THEN
            (SELECT string_agg(b ->> 'text', E'\n')
             FROM jsonb_array_elements(payload -> 'message' -> 'content') AS b
             WHERE jsonb_typeof(b) = 'object' AND b ->> 'type' = 'text')
    END
$$;

ALTER TABLE events ADD COLUMN search tsvector
    GENERATED ALWAYS AS (to_tsvector('english', coalesce(event_text(type, payload), ''))) STORED;

CREATE INDEX events_search_idx ON events USING gin (search) WHERE type IN ('prompt', 'assistant');
