package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// OIDCUser returns the account linked to the provider's person (issuer,
// subject), or ErrNotFound.
func (s *Store) OIDCUser(ctx context.Context, issuer, subject string) (User, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+prefixed("u.", userColumns)+`
		FROM oidc_identities i JOIN users u ON u.id = i.user_id
		WHERE i.issuer = $1 AND i.subject = $2`, issuer, subject)
	u, err := pgx.CollectOneRow(rows, pgx.RowToStructByName[User])
	if err != nil {
		return User{}, fmt.Errorf("user of %s at %s: %w", subject, issuer, notFound(err))
	}
	return u, nil
}

// LinkOIDC links an account to the provider's person. An account linked
// to another person, or a person linked to another account, gives
// ErrExists.
func (s *Store) LinkOIDC(ctx context.Context, userID int64, issuer, subject string) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO oidc_identities (user_id, issuer, subject) VALUES ($1, $2, $3)`,
		userID, issuer, subject)
	if pgErr := (*pgconn.PgError)(nil); errors.As(err, &pgErr) && pgErr.Code == "23505" {
		return fmt.Errorf("link user %d to %s: %w", userID, subject, ErrExists)
	}
	if err != nil {
		return fmt.Errorf("link user %d to %s: %w", userID, subject, err)
	}
	return nil
}

// ProjectIDByName returns the id of the one project named name (any
// case), or ErrNotFound (none, or more than one).
func (s *Store) ProjectIDByName(ctx context.Context, name string) (int64, error) {
	rows, _ := s.pool.Query(ctx, `SELECT id FROM projects WHERE lower(name) = lower($1)`, strings.TrimSpace(name))
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return 0, fmt.Errorf("project %q: %w", name, err)
	}
	if len(ids) != 1 {
		return 0, fmt.Errorf("project %q (%d found): %w", name, len(ids), ErrNotFound)
	}
	return ids[0], nil
}

// OIDCGrants are what a provider's groups give one account: the admin flag
// (nil = the groups do not govern it) and a role in each project the
// mapping names ("" = none).
type OIDCGrants struct {
	Admin *bool
	Roles map[int64]string
}

// OIDCChange is one change SyncOIDCGrants made: the admin flag (Admin set)
// or a project role (Before → Role, "" = none).
type OIDCChange struct {
	Admin        *bool
	ProjectID    int64
	Before, Role string
}

// SyncOIDCGrants makes the account's admin flag and memberships what g
// says, in one transaction, and returns what changed. Only what the groups
// gave is taken away: an admin flag or a membership given by hand stays.
func (s *Store) SyncOIDCGrants(ctx context.Context, userID int64, g OIDCGrants) ([]OIDCChange, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("sync grants of user %d: %w", userID, err)
	}
	defer tx.Rollback(ctx)
	var changes []OIDCChange
	if g.Admin != nil {
		changed, err := syncAdmin(ctx, tx, userID, *g.Admin)
		if err != nil {
			return nil, err
		}
		if changed {
			changes = append(changes, OIDCChange{Admin: g.Admin})
		}
	}
	for pid, role := range g.Roles {
		before, err := syncRole(ctx, tx, userID, pid, role)
		if err != nil {
			return nil, err
		}
		if before != role {
			changes = append(changes, OIDCChange{ProjectID: pid, Before: before, Role: role})
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("sync grants of user %d: commit: %w", userID, err)
	}
	return changes, nil
}

// syncAdmin gives the account the admin flag, or takes away one the
// groups gave (admin_granted); a flag given by hand stays.
func syncAdmin(ctx context.Context, tx pgx.Tx, userID int64, admin bool) (bool, error) {
	var isAdmin, granted bool
	err := tx.QueryRow(ctx, `SELECT u.is_admin, coalesce(i.admin_granted, false)
		FROM users u LEFT JOIN oidc_identities i ON i.user_id = u.id WHERE u.id = $1 FOR UPDATE OF u`, userID).Scan(&isAdmin, &granted)
	if err != nil {
		return false, fmt.Errorf("admin flag of user %d: %w", userID, notFound(err))
	}
	if admin == isAdmin || !admin && !granted {
		return false, nil
	}
	if _, err := tx.Exec(ctx, `UPDATE users SET is_admin = $2 WHERE id = $1`, userID, admin); err != nil {
		return false, fmt.Errorf("set admin of user %d: %w", userID, err)
	}
	if _, err := tx.Exec(ctx, `UPDATE oidc_identities SET admin_granted = $2 WHERE user_id = $1`, userID, admin); err != nil {
		return false, fmt.Errorf("set admin of user %d: %w", userID, err)
	}
	return true, nil
}

// syncRole gives the account role in the project (none when ""), unless
// it is a member by hand, and returns the role it had (a member by hand
// keeps theirs, which is returned as role: no change).
func syncRole(ctx context.Context, tx pgx.Tx, userID, projectID int64, role string) (string, error) {
	var byHand bool
	var before string
	err := tx.QueryRow(ctx, `SELECT NOT EXISTS (SELECT 1 FROM oidc_grants WHERE user_id = $1 AND project_id = $2), role
		FROM project_members WHERE user_id = $1 AND project_id = $2 FOR UPDATE`, userID, projectID).Scan(&byHand, &before)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("project %d: membership of user %d: %w", projectID, userID, err)
	}
	if byHand {
		return role, nil
	}
	q := []string{`DELETE FROM project_members WHERE user_id = $1 AND project_id = $2`,
		`DELETE FROM oidc_grants WHERE user_id = $1 AND project_id = $2`}
	args := []any{userID, projectID}
	if role != "" {
		q = []string{`INSERT INTO project_members (project_id, user_id, role) VALUES ($2, $1, $3)
			ON CONFLICT (project_id, user_id) DO UPDATE SET role = excluded.role`,
			`INSERT INTO oidc_grants (user_id, project_id, role) VALUES ($1, $2, $3)
			ON CONFLICT (user_id, project_id) DO UPDATE SET role = excluded.role`}
		args = append(args, role)
	}
	for _, sql := range q {
		if _, err := tx.Exec(ctx, sql, args...); err != nil {
			return "", fmt.Errorf("project %d: grant user %d %q: %w", projectID, userID, role, err)
		}
	}
	return before, nil
}

// OIDCSession is a sign-in made through the provider, due for its check.
// Its refresh token is RefreshSealed (oidclogin seals it; the key is not
// in Postgres), or, in a row written before tokens were sealed, the clear
// RefreshToken, which then wins.
type OIDCSession struct {
	TokenHash     []byte `db:"token_hash"`
	UserID        int64  `db:"user_id"`
	RefreshToken  string `db:"refresh_token"`
	RefreshSealed []byte `db:"refresh_sealed"`
	Granted       string `db:"granted"` // what the groups gave at the last check (oidclogin's form)
}

// CreateOIDCSession records that the sign-in tokenHash was made through
// the provider, with its sealed refresh token and what the groups granted.
func (s *Store) CreateOIDCSession(ctx context.Context, tokenHash []byte, userID int64, sealed []byte, granted string) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO oidc_sessions (token_hash, user_id, refresh_sealed, granted) VALUES ($1, $2, $3, $4)`,
		tokenHash, userID, noBytes(sealed), granted)
	if err != nil {
		return fmt.Errorf("record provider sign-in of user %d: %w", userID, err)
	}
	return nil
}

// ClaimDueOIDCSessions returns up to limit live provider sign-ins last
// checked more than every ago, marking them checked now: of several
// replicas, one checks each (SKIP LOCKED).
func (s *Store) ClaimDueOIDCSessions(ctx context.Context, every time.Duration, limit int) ([]OIDCSession, error) {
	rows, _ := s.pool.Query(ctx, `
		UPDATE oidc_sessions o SET checked_at = now()
		FROM (SELECT s.token_hash FROM oidc_sessions s JOIN auth_sessions a ON a.token_hash = s.token_hash
			WHERE s.checked_at <= now() - $1 * interval '1 second' AND a.revoked_at IS NULL AND a.expires_at > now()
			ORDER BY s.checked_at LIMIT $2 FOR UPDATE OF s SKIP LOCKED) due
		WHERE o.token_hash = due.token_hash
		RETURNING o.token_hash, o.user_id, o.refresh_token, o.refresh_sealed, o.granted`, every.Seconds(), limit)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[OIDCSession])
	if err != nil {
		return nil, fmt.Errorf("claim provider sign-ins due: %w", err)
	}
	return list, nil
}

// UpdateOIDCSession keeps a checked sign-in's new sealed refresh token
// and grants; a refresh token kept in clear goes.
func (s *Store) UpdateOIDCSession(ctx context.Context, tokenHash []byte, sealed []byte, granted string) error {
	_, err := s.pool.Exec(ctx, `UPDATE oidc_sessions SET refresh_sealed = $2, refresh_token = '', granted = $3 WHERE token_hash = $1`,
		tokenHash, noBytes(sealed), granted)
	if err != nil {
		return fmt.Errorf("update provider sign-in: %w", err)
	}
	return nil
}

// ClearOIDCSessions returns the provider sign-ins whose refresh token is
// still kept in clear (rows from before tokens were sealed).
func (s *Store) ClearOIDCSessions(ctx context.Context) ([]OIDCSession, error) {
	rows, _ := s.pool.Query(ctx, `SELECT token_hash, user_id, refresh_token, refresh_sealed, granted
		FROM oidc_sessions WHERE refresh_token <> ''`)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[OIDCSession])
	if err != nil {
		return nil, fmt.Errorf("provider sign-ins kept in clear: %w", err)
	}
	return list, nil
}

// SealOIDCSession replaces a sign-in's clear refresh token with sealed,
// unless the row changed meanwhile (a re-check wrote a newer token).
func (s *Store) SealOIDCSession(ctx context.Context, tokenHash []byte, clear string, sealed []byte) error {
	_, err := s.pool.Exec(ctx, `UPDATE oidc_sessions SET refresh_sealed = $3, refresh_token = ''
		WHERE token_hash = $1 AND refresh_token = $2`, tokenHash, clear, noBytes(sealed))
	if err != nil {
		return fmt.Errorf("seal provider sign-in: %w", err)
	}
	return nil
}

// noBytes is b, or no bytes rather than NULL (the column is NOT NULL).
func noBytes(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
