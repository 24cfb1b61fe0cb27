ALTER TABLE session_line DROP COLUMN parley;
