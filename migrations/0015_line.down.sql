DROP TABLE IF EXISTS session_line;
