package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Kinds of account link.
const (
	LinkInvite = "invite"
	LinkReset  = "reset"
)

// ErrLinkUsed and ErrLinkExpired refuse an account link that worked once
// already, or whose time is up.
var (
	ErrLinkUsed    = errors.New("the link was used already")
	ErrLinkExpired = errors.New("the link has expired")
)

// AccountLink is an invitation or a password-reset link; only the SHA-256
// of its token is stored.
type AccountLink struct {
	TokenHash []byte     `db:"token_hash"`
	Kind      string     `db:"kind"`
	Email     string     `db:"email"`
	UserID    *int64     `db:"user_id"`
	Admin     bool       `db:"admin"`
	ProjectID *int64     `db:"project_id"`
	Role      *string    `db:"role"`
	CreatedBy *int64     `db:"created_by"`
	CreatedAt time.Time  `db:"created_at"`
	ExpiresAt time.Time  `db:"expires_at"`
	UsedAt    *time.Time `db:"used_at"`
}

const linkColumns = `token_hash, kind, email, user_id, admin, project_id, role, created_by, created_at, expires_at, used_at`

// CreateAccountLink stores l (its TokenHash, Kind, Email, ExpiresAt and
// whichever of the rest apply).
func (s *Store) CreateAccountLink(ctx context.Context, l AccountLink) error {
	_, err := s.pool.Exec(ctx, `
		INSERT INTO account_links (token_hash, kind, email, user_id, admin, project_id, role, created_by, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		l.TokenHash, l.Kind, strings.TrimSpace(l.Email), l.UserID, l.Admin, l.ProjectID, l.Role, l.CreatedBy, l.ExpiresAt)
	if err != nil {
		return fmt.Errorf("create %s link for %s: %w", l.Kind, l.Email, err)
	}
	return nil
}

// AccountLinkByToken returns the link of kind whose token hashes to
// tokenHash if it still works; ErrNotFound, ErrLinkUsed or ErrLinkExpired
// if not.
func (s *Store) AccountLinkByToken(ctx context.Context, kind string, tokenHash []byte) (AccountLink, error) {
	return linkOf(ctx, s.pool, kind, tokenHash, "")
}

// linkOf loads a link (with lock, e.g. "FOR UPDATE") and checks it works.
func linkOf(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, kind string, tokenHash []byte, lock string) (AccountLink, error) {
	rows, _ := q.Query(ctx, `SELECT `+linkColumns+`, now() AS at FROM account_links WHERE token_hash = $1 AND kind = $2 `+lock, tokenHash, kind)
	type row struct {
		AccountLink
		At time.Time `db:"at"`
	}
	l, err := pgx.CollectOneRow(rows, pgx.RowToStructByName[row])
	switch {
	case err != nil:
		return AccountLink{}, fmt.Errorf("%s link: %w", kind, notFound(err))
	case l.UsedAt != nil:
		return l.AccountLink, fmt.Errorf("%s link: %w", kind, ErrLinkUsed)
	case !l.At.Before(l.ExpiresAt):
		return l.AccountLink, fmt.Errorf("%s link: %w", kind, ErrLinkExpired)
	}
	return l.AccountLink, nil
}

// AcceptInvite uses the invitation once, in one transaction: it makes the
// account (email as invited), adds it to the invitation's project and
// marks the link used. A link used, expired or unknown gives ErrLinkUsed,
// ErrLinkExpired or ErrNotFound; an email taken since gives ErrExists.
func (s *Store) AcceptInvite(ctx context.Context, tokenHash []byte, name, passwordHash string) (User, AccountLink, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return User{}, AccountLink{}, fmt.Errorf("accept invitation: %w", err)
	}
	defer tx.Rollback(ctx)
	l, err := linkOf(ctx, tx, LinkInvite, tokenHash, "FOR UPDATE")
	if err != nil {
		return User{}, l, err
	}
	rows, _ := tx.Query(ctx, `
		INSERT INTO users (email, name, password_hash, is_admin) VALUES ($1, $2, $3, $4)
		ON CONFLICT DO NOTHING RETURNING `+userColumns, l.Email, name, passwordHash, l.Admin)
	u, err := pgx.CollectOneRow(rows, pgx.RowToStructByName[User])
	if errors.Is(err, pgx.ErrNoRows) {
		return User{}, l, fmt.Errorf("accept invitation of %s: %w", l.Email, ErrExists)
	}
	if err != nil {
		return User{}, l, fmt.Errorf("accept invitation of %s: %w", l.Email, err)
	}
	if l.ProjectID != nil && l.Role != nil {
		if _, err := tx.Exec(ctx, `
			INSERT INTO project_members (project_id, user_id, role) VALUES ($1, $2, $3)
			ON CONFLICT DO NOTHING`, *l.ProjectID, u.ID, *l.Role); err != nil {
			return User{}, l, fmt.Errorf("accept invitation of %s: join project %d: %w", l.Email, *l.ProjectID, err)
		}
	}
	if err := useLink(ctx, tx, tokenHash); err != nil {
		return User{}, l, err
	}
	if err := tx.Commit(ctx); err != nil {
		return User{}, l, fmt.Errorf("accept invitation of %s: commit: %w", l.Email, err)
	}
	return u, l, nil
}

// UseResetLink uses the password-reset link once, in one transaction: the
// new password is set, every sign-in of the account ends, the link is
// marked used.
func (s *Store) UseResetLink(ctx context.Context, tokenHash []byte, passwordHash string) (User, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return User{}, fmt.Errorf("reset password: %w", err)
	}
	defer tx.Rollback(ctx)
	l, err := linkOf(ctx, tx, LinkReset, tokenHash, "FOR UPDATE")
	if err != nil {
		return User{}, err
	}
	rows, _ := tx.Query(ctx, `UPDATE users SET password_hash = $2 WHERE id = $1 RETURNING `+userColumns, *l.UserID, passwordHash)
	u, err := pgx.CollectOneRow(rows, pgx.RowToStructByName[User])
	if err != nil {
		return User{}, fmt.Errorf("reset password of user %d: %w", *l.UserID, notFound(err))
	}
	if _, err := tx.Exec(ctx, `UPDATE auth_sessions SET revoked_at = now() WHERE user_id = $1 AND revoked_at IS NULL`, u.ID); err != nil {
		return User{}, fmt.Errorf("reset password of user %d: revoke sign-ins: %w", u.ID, err)
	}
	if err := useLink(ctx, tx, tokenHash); err != nil {
		return User{}, err
	}
	if err := tx.Commit(ctx); err != nil {
		return User{}, fmt.Errorf("reset password of user %d: commit: %w", u.ID, err)
	}
	return u, nil
}

func useLink(ctx context.Context, tx pgx.Tx, tokenHash []byte) error {
	if _, err := tx.Exec(ctx, `UPDATE account_links SET used_at = now() WHERE token_hash = $1`, tokenHash); err != nil {
		return fmt.Errorf("mark link used: %w", err)
	}
	return nil
}

// PendingInvites lists the invitations not used and not expired, newest
// first.
func (s *Store) PendingInvites(ctx context.Context) ([]AccountLink, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+linkColumns+` FROM account_links
		WHERE kind = 'invite' AND used_at IS NULL AND expires_at > now() ORDER BY created_at DESC`)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[AccountLink])
	if err != nil {
		return nil, fmt.Errorf("pending invitations: %w", err)
	}
	return list, nil
}
