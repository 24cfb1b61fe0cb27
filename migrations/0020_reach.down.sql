DROP TABLE answer_tokens;
DROP TABLE reach_deliveries;
DROP TABLE reach_stages;
DROP TABLE reach_looking;
DROP TABLE project_reach;
DROP TABLE user_reach;
DROP TABLE push_devices;
DROP TABLE reach_keys;
