package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Session is one conversation with Claude inside a project. ClaudeSessionID is the id passed
// to `claude --session-id` on the first run and to `--resume` afterwards.
type Session struct {
	ID              string    `db:"id"`
	ProjectID       int64     `db:"project_id"`
	ClaudeSessionID string    `db:"claude_session_id"`
	Title           string    `db:"title"`
	Status          string    `db:"status"`
	ClaudeStarted   bool      `db:"claude_started"`
	TotalCostUSD    float64   `db:"total_cost_usd"`
	NumTurns        int       `db:"num_turns"`
	CreatedBy       string    `db:"created_by"`
	CreatedAt       time.Time `db:"created_at"`
	UpdatedAt       time.Time `db:"updated_at"`
}

const sessionColumns = `id, project_id, claude_session_id, title, status, claude_started,
	total_cost_usd, num_turns, created_by, created_at, updated_at`

// CreateSession creates an idle session in the project with fresh ids.
func (s *Store) CreateSession(ctx context.Context, projectID int64, title, createdBy string) (Session, error) {
	rows, _ := s.pool.Query(ctx, `
		INSERT INTO sessions (id, project_id, claude_session_id, title, status, created_by)
		VALUES ($1, $2, $3, $4, 'idle', $5)
		RETURNING `+sessionColumns,
		uuid.NewString(), projectID, uuid.NewString(), title, createdBy)
	sess, err := pgx.CollectOneRow(rows, pgx.RowToStructByName[Session])
	if err != nil {
		return Session{}, fmt.Errorf("create session in project %d: %w", projectID, err)
	}
	return sess, nil
}

// GetSession returns the session with id, or ErrNotFound.
func (s *Store) GetSession(ctx context.Context, id string) (Session, error) {
	if uuid.Validate(id) != nil {
		return Session{}, fmt.Errorf("get session %s: %w", id, ErrNotFound)
	}
	rows, _ := s.pool.Query(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE id = $1`, id)
	sess, err := pgx.CollectOneRow(rows, pgx.RowToStructByName[Session])
	if err != nil {
		return Session{}, fmt.Errorf("get session %s: %w", id, notFound(err))
	}
	return sess, nil
}

// ListSessions returns the project's sessions that are not archived, most
// recently updated first (SearchSessions lists archived ones too).
func (s *Store) ListSessions(ctx context.Context, projectID int64) ([]Session, error) {
	rows, _ := s.pool.Query(ctx, `
		SELECT `+sessionColumns+` FROM sessions
		WHERE project_id = $1 AND archived_at IS NULL
		ORDER BY updated_at DESC, created_at DESC`, projectID)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[Session])
	if err != nil {
		return nil, fmt.Errorf("list sessions of project %d: %w", projectID, err)
	}
	return list, nil
}

// MarkClaudeStarted records that claude has run once for the session, so later runs resume it.
func (s *Store) MarkClaudeStarted(ctx context.Context, id string) error {
	return s.updateSession(ctx, "mark claude started", id,
		`UPDATE sessions SET claude_started = true, updated_at = now() WHERE id = $1`)
}

// SetClaudeSessionID gives the session a new CLI conversation, not yet
// started: the old one could not be resumed.
func (s *Store) SetClaudeSessionID(ctx context.Context, id, claudeSessionID string) error {
	return s.updateSession(ctx, "set claude session id", id,
		`UPDATE sessions SET claude_session_id = $2, claude_started = false, updated_at = now() WHERE id = $1`, claudeSessionID)
}

// SetSessionStatus sets the session's status: idle, running, waiting,
// completed, interrupted, error or ended.
func (s *Store) SetSessionStatus(ctx context.Context, id, status string) error {
	return s.updateSession(ctx, "set status "+status, id,
		`UPDATE sessions SET status = $2, updated_at = now() WHERE id = $1`, status)
}

// AddSessionUsage adds a turn's cost and turns to the session's totals and
// to its project's spending of the day (turn_costs).
func (s *Store) AddSessionUsage(ctx context.Context, id string, costUSD float64, turns int) error {
	var n int
	err := s.pool.QueryRow(ctx, `
		WITH s AS (
			UPDATE sessions
			SET total_cost_usd = total_cost_usd + $2, num_turns = num_turns + $3, updated_at = now()
			WHERE id = $1
			RETURNING project_id
		), c AS (
			INSERT INTO turn_costs (project_id, session_id, cost_usd)
			SELECT project_id, $1, $2 FROM s WHERE $2 > 0
		)
		SELECT count(*) FROM s`, id, costUSD, turns).Scan(&n)
	if err != nil {
		return fmt.Errorf("session %s: add usage: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("session %s: add usage: %w", id, ErrNotFound)
	}
	return nil
}

// updateSession runs an UPDATE on one session and reports ErrNotFound when it matched no row.
func (s *Store) updateSession(ctx context.Context, op, id, sql string, args ...any) error {
	tag, err := s.pool.Exec(ctx, sql, append([]any{id}, args...)...)
	if err != nil {
		return fmt.Errorf("session %s: %s: %w", id, op, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("session %s: %s: %w", id, op, ErrNotFound)
	}
	return nil
}
