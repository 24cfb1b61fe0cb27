DROP TABLE IF EXISTS account_links;
ALTER TABLE users DROP COLUMN IF EXISTS deactivated_at;
