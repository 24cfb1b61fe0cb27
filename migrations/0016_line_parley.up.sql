-- A prompt Parley sends on its own (the one that has Claude go on with a
-- turn a drain or a crash cut off) is marked here and in its prompt
-- event's payload ("parley": true), not by its text: a member's message
-- that happens to start like Parley's is still a member's. Rows kept by
-- the release before this one are marked by the text they were written
-- with (only Parley's prompts began with it then, short of a member
-- typing it).
ALTER TABLE session_line ADD COLUMN parley boolean NOT NULL DEFAULT false;
UPDATE session_line SET parley = true WHERE kind = 'prompt' AND starts_with(text, '(Sent by Parley.) ');
