DROP TRIGGER IF EXISTS inputs_board_notify ON inputs;
DROP FUNCTION IF EXISTS parley_inputs_notify();
DROP TRIGGER IF EXISTS sessions_board_notify_update ON sessions;
DROP TRIGGER IF EXISTS sessions_board_notify ON sessions;
DROP FUNCTION IF EXISTS parley_sessions_notify();
DROP TABLE IF EXISTS session_reads;
