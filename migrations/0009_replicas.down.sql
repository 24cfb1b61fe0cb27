DROP TRIGGER IF EXISTS events_notify ON events;
DROP FUNCTION IF EXISTS parley_events_notify();
DROP TABLE IF EXISTS cluster_requests;
ALTER TABLE runs DROP COLUMN IF EXISTS replica_id;
DROP TABLE IF EXISTS session_leases;
DROP TABLE IF EXISTS replicas;
