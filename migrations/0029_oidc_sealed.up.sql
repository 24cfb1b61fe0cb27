-- A provider sign-in's refresh token, sealed (package secretbox: a
-- version byte, then AES-256-GCM bound to the row's token_hash and
-- user_id) under a key kept outside Postgres. refresh_token then stays
-- empty; a row that still holds one there (written before this, or by a
-- replica not yet upgraded) is read as is and sealed at its next write.
ALTER TABLE oidc_sessions ADD COLUMN refresh_sealed bytea NOT NULL DEFAULT ''::bytea;
