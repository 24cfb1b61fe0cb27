-- Sign-in throttling that counts across replicas and that an outsider
-- cannot use to lock a teammate out (server/login_throttle.go).

-- Each client address's sign-in budget (an IPv6 address's /64): a token
-- bucket of PARLEY_LOGINS_PER_MINUTE tokens, refilled evenly over a
-- minute, shared by every replica. Rows untouched for two minutes are
-- full again and pruned.
CREATE TABLE login_address_budget (
    addr    text PRIMARY KEY,
    tokens  double precision NOT NULL,
    ok      boolean NOT NULL DEFAULT true,  -- whether the last attempt was let through
    at      timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX login_address_budget_at_idx ON login_address_budget (at);

-- Browsers that have signed in: the device cookie's random token, stored
-- as its SHA-256. A sign-in from a known browser is throttled by that
-- browser, not by its address, so failures of others at the same address
-- do not lock it out.
CREATE TABLE login_devices (
    token_hash   bytea PRIMARY KEY,
    user_id      bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX login_devices_user_idx ON login_devices (user_id, last_used_at);
