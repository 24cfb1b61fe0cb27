-- A replica that is shutting down (SIGTERM) marks itself draining: its runs
-- in flight finish, and no session is leased to it any more; sessions that
-- need a process go to a replica that is not draining.
ALTER TABLE replicas ADD COLUMN draining boolean NOT NULL DEFAULT false;
