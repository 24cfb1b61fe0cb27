DROP TABLE oidc_sessions;
DROP TABLE oidc_grants;
DROP TABLE oidc_identities;
