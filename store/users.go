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

// ErrExists is returned when a row with the same unique key exists.
var ErrExists = errors.New("already exists")

// User is a Parley account.
type User struct {
	ID           int64     `db:"id"`
	Email        string    `db:"email"`
	Name         string    `db:"name"`
	PasswordHash string    `db:"password_hash"`
	IsAdmin      bool      `db:"is_admin"`
	CreatedAt    time.Time `db:"created_at"`
}

// DisplayName is how the user is shown to others: their name, else their email.
func (u User) DisplayName() string {
	if u.Name != "" {
		return u.Name
	}
	return u.Email
}

const userColumns = `id, email, name, password_hash, is_admin, created_at`

// CreateUser adds an account; an email taken (in any case) gives ErrExists.
func (s *Store) CreateUser(ctx context.Context, email, name, passwordHash string, admin bool) (User, error) {
	rows, _ := s.pool.Query(ctx, `
		INSERT INTO users (email, name, password_hash, is_admin) VALUES ($1, $2, $3, $4)
		RETURNING `+userColumns, strings.TrimSpace(email), name, passwordHash, admin)
	u, err := pgx.CollectOneRow(rows, pgx.RowToStructByName[User])
	if pgErr := (*pgconn.PgError)(nil); errors.As(err, &pgErr) && pgErr.Code == "23505" {
		return User{}, fmt.Errorf("create user %s: %w", email, ErrExists)
	}
	if err != nil {
		return User{}, fmt.Errorf("create user %s: %w", email, err)
	}
	return u, nil
}

// UserByEmail returns the account with email (any case), or ErrNotFound.
func (s *Store) UserByEmail(ctx context.Context, email string) (User, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+userColumns+` FROM users WHERE lower(email) = lower($1)`, strings.TrimSpace(email))
	u, err := pgx.CollectOneRow(rows, pgx.RowToStructByName[User])
	if err != nil {
		return User{}, fmt.Errorf("user %s: %w", email, notFound(err))
	}
	return u, nil
}

// ListUsers returns every account, by email.
func (s *Store) ListUsers(ctx context.Context) ([]User, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+userColumns+` FROM users ORDER BY lower(email)`)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[User])
	if err != nil {
		return nil, fmt.Errorf("list users: %w", err)
	}
	return list, nil
}

// CountUsers returns how many accounts exist.
func (s *Store) CountUsers(ctx context.Context) (int, error) {
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM users`).Scan(&n); err != nil {
		return 0, fmt.Errorf("count users: %w", err)
	}
	return n, nil
}

// SetPassword changes a user's password and ends every sign-in of theirs,
// in one transaction.
func (s *Store) SetPassword(ctx context.Context, userID int64, passwordHash string) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("set password of user %d: %w", userID, err)
	}
	defer tx.Rollback(ctx)
	tag, err := tx.Exec(ctx, `UPDATE users SET password_hash = $2 WHERE id = $1`, userID, passwordHash)
	if err != nil {
		return fmt.Errorf("set password of user %d: %w", userID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("set password of user %d: %w", userID, ErrNotFound)
	}
	if _, err := tx.Exec(ctx, `UPDATE auth_sessions SET revoked_at = now() WHERE user_id = $1 AND revoked_at IS NULL`, userID); err != nil {
		return fmt.Errorf("set password of user %d: revoke sessions: %w", userID, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("set password of user %d: commit: %w", userID, err)
	}
	return nil
}

// DeleteUser removes an account; its sign-ins and memberships go with it.
func (s *Store) DeleteUser(ctx context.Context, userID int64) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM users WHERE id = $1`, userID)
	if err != nil {
		return fmt.Errorf("delete user %d: %w", userID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("delete user %d: %w", userID, ErrNotFound)
	}
	return nil
}

// AuthSession is a live sign-in with its user.
type AuthSession struct {
	User
	CSRFToken string    `db:"csrf_token"`
	ExpiresAt time.Time `db:"expires_at"`
}

// CreateAuthSession records a sign-in: tokenHash is the SHA-256 of the
// cookie's token.
func (s *Store) CreateAuthSession(ctx context.Context, userID int64, tokenHash []byte, csrf string, expires time.Time, ip, userAgent string) error {
	_, err := s.pool.Exec(ctx, `
		INSERT INTO auth_sessions (token_hash, user_id, csrf_token, expires_at, ip, user_agent)
		VALUES ($1, $2, $3, $4, $5, $6)`, tokenHash, userID, csrf, expires, ip, userAgent)
	if err != nil {
		return fmt.Errorf("create sign-in for user %d: %w", userID, err)
	}
	return nil
}

// AuthSessionByToken returns the sign-in with tokenHash if it is neither
// expired nor revoked, else ErrNotFound.
func (s *Store) AuthSessionByToken(ctx context.Context, tokenHash []byte) (AuthSession, error) {
	rows, _ := s.pool.Query(ctx, `
		SELECT `+prefixed("u.", userColumns)+`, a.csrf_token, a.expires_at
		FROM auth_sessions a JOIN users u ON u.id = a.user_id
		WHERE a.token_hash = $1 AND a.revoked_at IS NULL AND a.expires_at > now() AND u.deactivated_at IS NULL`, tokenHash)
	a, err := pgx.CollectOneRow(rows, pgx.RowToStructByName[AuthSession])
	if err != nil {
		return AuthSession{}, fmt.Errorf("sign-in: %w", notFound(err))
	}
	return a, nil
}

// RevokeAuthSession ends one sign-in (logout).
func (s *Store) RevokeAuthSession(ctx context.Context, tokenHash []byte) error {
	_, err := s.pool.Exec(ctx, `UPDATE auth_sessions SET revoked_at = now() WHERE token_hash = $1 AND revoked_at IS NULL`, tokenHash)
	if err != nil {
		return fmt.Errorf("revoke sign-in: %w", err)
	}
	return nil
}

// SweepAuthSessions deletes sign-ins that expired or were revoked more than
// a day ago.
func (s *Store) SweepAuthSessions(ctx context.Context) error {
	_, err := s.pool.Exec(ctx, `
		DELETE FROM auth_sessions
		WHERE expires_at < now() - interval '1 day' OR revoked_at < now() - interval '1 day'`)
	if err != nil {
		return fmt.Errorf("sweep sign-ins: %w", err)
	}
	return nil
}

// LoginLockedUntil returns when the lock on email from ip ends; the zero
// time when there is none.
func (s *Store) LoginLockedUntil(ctx context.Context, email, ip string) (time.Time, error) {
	var until *time.Time
	err := s.pool.QueryRow(ctx, `
		SELECT locked_until FROM login_failures
		WHERE email = lower($1) AND ip = $2 AND locked_until > now()`, email, ip).Scan(&until)
	if errors.Is(err, pgx.ErrNoRows) || until == nil {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("login lock of %s: %w", email, err)
	}
	return *until, nil
}

// CountLoginAttempt counts a sign-in attempt of email from ip before its
// password is checked, atomically, so a burst of concurrent attempts cannot
// all pass: it returns the attempt's number within window (a success
// clears the count) and, when the pair is locked, when the lock ends.
// Rows whose window and lock have both passed are pruned on the way.
func (s *Store) CountLoginAttempt(ctx context.Context, email, ip string, window time.Duration) (int, time.Time, error) {
	if _, err := s.pool.Exec(ctx, `
		DELETE FROM login_failures
		WHERE first_at < now() - $1 * interval '1 second' AND (locked_until IS NULL OR locked_until < now())`,
		window.Seconds()); err != nil {
		return 0, time.Time{}, fmt.Errorf("prune login failures: %w", err)
	}
	var n int
	var until *time.Time
	err := s.pool.QueryRow(ctx, `
		INSERT INTO login_failures AS f (email, ip, failures, first_at) VALUES (lower($1), $2, 1, now())
		ON CONFLICT (email, ip) DO UPDATE SET
			failures = CASE WHEN f.first_at < now() - $3 * interval '1 second' THEN 1 ELSE f.failures + 1 END,
			first_at = CASE WHEN f.first_at < now() - $3 * interval '1 second' THEN now() ELSE f.first_at END
		RETURNING failures, CASE WHEN locked_until > now() THEN locked_until END`,
		email, ip, window.Seconds()).Scan(&n, &until)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("count login attempt of %s: %w", email, err)
	}
	if until == nil {
		return n, time.Time{}, nil
	}
	return n, *until, nil
}

// LockLogin locks sign-ins of email from ip for lock and returns when the
// lock ends (an earlier lock still running is kept).
func (s *Store) LockLogin(ctx context.Context, email, ip string, lock time.Duration) (time.Time, error) {
	var until time.Time
	err := s.pool.QueryRow(ctx, `
		UPDATE login_failures SET
			locked_until = CASE WHEN locked_until > now() THEN locked_until ELSE now() + $3 * interval '1 second' END,
			failures = 0, first_at = now()
		WHERE email = lower($1) AND ip = $2
		RETURNING locked_until`, email, ip, lock.Seconds()).Scan(&until)
	if err != nil {
		return time.Time{}, fmt.Errorf("lock login of %s: %w", email, err)
	}
	return until, nil
}

// CountLoginFailureRows is how many throttling rows are kept (for tests
// of the pruning).
func (s *Store) CountLoginFailureRows(ctx context.Context) (int, error) {
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM login_failures`).Scan(&n); err != nil {
		return 0, fmt.Errorf("count login failures: %w", err)
	}
	return n, nil
}

// ClearLoginFailures forgets the failures of email from ip (after a
// successful sign-in).
func (s *Store) ClearLoginFailures(ctx context.Context, email, ip string) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM login_failures WHERE email = lower($1) AND ip = $2`, email, ip)
	if err != nil {
		return fmt.Errorf("clear login failures of %s: %w", email, err)
	}
	return nil
}
