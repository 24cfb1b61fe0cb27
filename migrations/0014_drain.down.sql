ALTER TABLE replicas DROP COLUMN draining;
