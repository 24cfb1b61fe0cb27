DROP INDEX IF EXISTS events_search_idx;
ALTER TABLE events DROP COLUMN IF EXISTS search;
DROP FUNCTION IF EXISTS event_text(text, jsonb);
DROP INDEX IF EXISTS sessions_title_search_idx;
ALTER TABLE sessions DROP COLUMN IF EXISTS archived_at;
