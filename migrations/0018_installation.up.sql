-- Facts about this installation that every replica shares, chosen once:
-- the uid range its runs get (a random one per installation, so two
-- Parleys on one host never hand a run the other's uids), and the range
-- last found unused by anything else on the machine.
CREATE TABLE installation (
    key        text PRIMARY KEY,
    value      text NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);
