package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// APIToken is one of a user's tokens for Parley's MCP endpoint. Only the
// SHA-256 of the token is stored.
type APIToken struct {
	ID         int64      `db:"id"`
	UserID     int64      `db:"user_id"`
	Name       string     `db:"name"`
	CreatedAt  time.Time  `db:"created_at"`
	LastUsedAt *time.Time `db:"last_used_at"`
	RevokedAt  *time.Time `db:"revoked_at"`
}

const apiTokenColumns = `id, user_id, name, created_at, last_used_at, revoked_at`

// CreateAPIToken stores a new token of the user by its hash.
func (s *Store) CreateAPIToken(ctx context.Context, userID int64, name string, tokenHash []byte) (APIToken, error) {
	rows, _ := s.pool.Query(ctx, `
		INSERT INTO api_tokens (user_id, name, token_hash) VALUES ($1, $2, $3)
		RETURNING `+apiTokenColumns, userID, name, tokenHash)
	t, err := pgx.CollectOneRow(rows, pgx.RowToStructByName[APIToken])
	if err != nil {
		return APIToken{}, fmt.Errorf("create api token for user %d: %w", userID, err)
	}
	return t, nil
}

// UserByAPIToken returns the user of the live (not revoked) token whose
// SHA-256 is tokenHash, and notes the token's use; an unknown or revoked
// token gives ErrNotFound. Every request that carries a token goes through
// it, so revoking a token takes effect at once.
func (s *Store) UserByAPIToken(ctx context.Context, tokenHash []byte) (User, error) {
	rows, _ := s.pool.Query(ctx, `
		WITH t AS (
			UPDATE api_tokens SET last_used_at = now()
			WHERE token_hash = $1 AND revoked_at IS NULL
			RETURNING user_id
		)
		SELECT `+prefixed("u.", userColumns)+` FROM t JOIN users u ON u.id = t.user_id
		WHERE u.deactivated_at IS NULL`, tokenHash)
	u, err := pgx.CollectOneRow(rows, pgx.RowToStructByName[User])
	if err != nil {
		return User{}, fmt.Errorf("api token: %w", notFound(err))
	}
	return u, nil
}

// APITokens lists the user's tokens, newest first, revoked ones included.
func (s *Store) APITokens(ctx context.Context, userID int64) ([]APIToken, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+apiTokenColumns+` FROM api_tokens
		WHERE user_id = $1 ORDER BY created_at DESC, id DESC`, userID)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[APIToken])
	if err != nil {
		return nil, fmt.Errorf("api tokens of user %d: %w", userID, err)
	}
	return list, nil
}

// AllAPITokens lists every user's tokens with the owner's email, for admins.
func (s *Store) AllAPITokens(ctx context.Context) ([]APITokenOfUser, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+prefixed("t.", apiTokenColumns)+`, u.email
		FROM api_tokens t JOIN users u ON u.id = t.user_id ORDER BY t.id`)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[APITokenOfUser])
	if err != nil {
		return nil, fmt.Errorf("all api tokens: %w", err)
	}
	return list, nil
}

// APITokenOfUser is a token with its user's email.
type APITokenOfUser struct {
	APIToken
	Email string `db:"email"`
}

// RevokeAPIToken revokes token id. userID limits it to that user's tokens
// (0 = any user's, for admins). A token that does not exist, belongs to
// someone else or is already revoked gives ErrNotFound.
func (s *Store) RevokeAPIToken(ctx context.Context, id, userID int64) error {
	tag, err := s.pool.Exec(ctx, `UPDATE api_tokens SET revoked_at = now()
		WHERE id = $1 AND ($2 = 0 OR user_id = $2) AND revoked_at IS NULL`, id, userID)
	if err != nil {
		return fmt.Errorf("revoke api token %d: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("revoke api token %d: %w", id, ErrNotFound)
	}
	return nil
}
