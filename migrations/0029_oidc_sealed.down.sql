-- Sealed refresh tokens go: those sign-ins end at their next re-check
-- (no refresh token: the person signs in again).
ALTER TABLE oidc_sessions DROP COLUMN refresh_sealed;
