DROP TABLE IF EXISTS project_retention;
DROP TABLE IF EXISTS deleted_sessions;
