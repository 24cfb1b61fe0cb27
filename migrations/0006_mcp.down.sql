DROP TABLE IF EXISTS session_options;
DROP TABLE IF EXISTS project_mcp_settings;
DROP TABLE IF EXISTS api_tokens;
