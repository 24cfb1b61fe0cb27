DROP INDEX IF EXISTS inputs_pending_age_idx;
DROP TABLE IF EXISTS project_ask_settings;
