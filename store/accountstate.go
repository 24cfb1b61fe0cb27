package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Account is a user with what the admin page shows of them.
type Account struct {
	User
	DeactivatedAt *time.Time `db:"deactivated_at"`
}

// Accounts lists every account with its state, by email.
func (s *Store) Accounts(ctx context.Context) ([]Account, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+userColumns+`, deactivated_at FROM users ORDER BY lower(email)`)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[Account])
	if err != nil {
		return nil, fmt.Errorf("list accounts: %w", err)
	}
	return list, nil
}

// AccountByID returns one account with its state, or ErrNotFound.
func (s *Store) AccountByID(ctx context.Context, id int64) (Account, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+userColumns+`, deactivated_at FROM users WHERE id = $1`, id)
	a, err := pgx.CollectOneRow(rows, pgx.RowToStructByName[Account])
	if err != nil {
		return Account{}, fmt.Errorf("account %d: %w", id, notFound(err))
	}
	return a, nil
}

// SetDeactivated deactivates (off) or reactivates an account. Deactivating
// also ends every sign-in of theirs and drops their unused password-reset
// links in the same transaction, so a reactivation does not bring an old
// cookie or link back; their API tokens are
// refused while the account is off (UserByAPIToken) and work again after.
func (s *Store) SetDeactivated(ctx context.Context, userID int64, off bool) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("deactivate user %d: %w", userID, err)
	}
	defer tx.Rollback(ctx)
	tag, err := tx.Exec(ctx, `UPDATE users SET deactivated_at = CASE WHEN $2 THEN coalesce(deactivated_at, now()) END
		WHERE id = $1`, userID, off)
	if err != nil {
		return fmt.Errorf("deactivate user %d: %w", userID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("deactivate user %d: %w", userID, ErrNotFound)
	}
	if off {
		if _, err := tx.Exec(ctx, `UPDATE auth_sessions SET revoked_at = now() WHERE user_id = $1 AND revoked_at IS NULL`, userID); err != nil {
			return fmt.Errorf("deactivate user %d: end sign-ins: %w", userID, err)
		}
		// A reset link sent before would give them a way back in.
		if _, err := tx.Exec(ctx, `DELETE FROM account_links WHERE user_id = $1 AND kind = 'reset' AND used_at IS NULL`, userID); err != nil {
			return fmt.Errorf("deactivate user %d: drop reset links: %w", userID, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("deactivate user %d: commit: %w", userID, err)
	}
	return nil
}

// SetAdmin makes an account an admin or not.
func (s *Store) SetAdmin(ctx context.Context, userID int64, admin bool) error {
	tag, err := s.pool.Exec(ctx, `UPDATE users SET is_admin = $2 WHERE id = $1`, userID, admin)
	if err != nil {
		return fmt.Errorf("set admin of user %d: %w", userID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("set admin of user %d: %w", userID, ErrNotFound)
	}
	return nil
}

// CountActiveAdmins is how many admins are not deactivated.
func (s *Store) CountActiveAdmins(ctx context.Context) (int, error) {
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM users WHERE is_admin AND deactivated_at IS NULL`).Scan(&n); err != nil {
		return 0, fmt.Errorf("count admins: %w", err)
	}
	return n, nil
}

// SetUserName changes the name an account is shown by.
func (s *Store) SetUserName(ctx context.Context, userID int64, name string) error {
	if _, err := s.pool.Exec(ctx, `UPDATE users SET name = $2 WHERE id = $1`, userID, name); err != nil {
		return fmt.Errorf("set name of user %d: %w", userID, err)
	}
	return nil
}

// RevokeAuthSessionsOf ends every sign-in of the user ("sign out
// everywhere").
func (s *Store) RevokeAuthSessionsOf(ctx context.Context, userID int64) error {
	if _, err := s.pool.Exec(ctx, `UPDATE auth_sessions SET revoked_at = now() WHERE user_id = $1 AND revoked_at IS NULL`, userID); err != nil {
		return fmt.Errorf("end sign-ins of user %d: %w", userID, err)
	}
	return nil
}

// UserDeactivated reports whether the account is deactivated.
func (s *Store) UserDeactivated(ctx context.Context, userID int64) (bool, error) {
	var off bool
	err := s.pool.QueryRow(ctx, `SELECT deactivated_at IS NOT NULL FROM users WHERE id = $1`, userID).Scan(&off)
	if err != nil {
		return false, fmt.Errorf("user %d: %w", userID, notFound(err))
	}
	return off, nil
}

// APITokenLive reports whether the token whose SHA-256 is tokenHash is
// neither revoked nor its account's deactivated (without noting a use).
func (s *Store) APITokenLive(ctx context.Context, tokenHash []byte) (bool, error) {
	var ok bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM api_tokens t JOIN users u ON u.id = t.user_id
		WHERE t.token_hash = $1 AND t.revoked_at IS NULL AND u.deactivated_at IS NULL)`, tokenHash).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("api token: %w", err)
	}
	return ok, nil
}
