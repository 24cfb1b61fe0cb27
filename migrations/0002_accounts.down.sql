ALTER TABLE sessions DROP COLUMN IF EXISTS created_by_user_id;
ALTER TABLE projects
    DROP COLUMN IF EXISTS model,
    DROP COLUMN IF EXISTS permission_mode,
    DROP COLUMN IF EXISTS allowed_tools,
    DROP COLUMN IF EXISTS disallowed_tools,
    DROP COLUMN IF EXISTS append_system_prompt,
    DROP COLUMN IF EXISTS max_turns,
    DROP COLUMN IF EXISTS ask_user_enabled,
    DROP COLUMN IF EXISTS ask_timeout_seconds,
    DROP COLUMN IF EXISTS permission_timeout_seconds,
    DROP COLUMN IF EXISTS instructions,
    DROP COLUMN IF EXISTS archived_at,
    DROP COLUMN IF EXISTS updated_at;
DROP TABLE IF EXISTS project_members;
DROP TABLE IF EXISTS login_failures;
DROP TABLE IF EXISTS auth_sessions;
DROP TABLE IF EXISTS users;
