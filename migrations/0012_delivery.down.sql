DROP INDEX IF EXISTS inputs_undelivered_idx;
ALTER TABLE inputs DROP COLUMN IF EXISTS delivered_how, DROP COLUMN IF EXISTS delivered_at;
