package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// KnownClaudeSessionIDs returns the CLI session ids of the project's
// Parley sessions, archived ones included.
func (s *Store) KnownClaudeSessionIDs(ctx context.Context, projectID int64) (map[string]bool, error) {
	rows, _ := s.pool.Query(ctx, `SELECT claude_session_id::text FROM sessions WHERE project_id = $1`, projectID)
	known, err := collectSet(rows)
	if err != nil {
		return nil, fmt.Errorf("claude session ids of project %d: %w", projectID, err)
	}
	return known, nil
}

// SessionByClaudeID returns the project's session whose CLI session id is
// claudeSessionID, or ErrNotFound.
func (s *Store) SessionByClaudeID(ctx context.Context, projectID int64, claudeSessionID string) (Session, error) {
	if uuid.Validate(claudeSessionID) != nil {
		return Session{}, fmt.Errorf("session by claude id %s: %w", claudeSessionID, ErrNotFound)
	}
	rows, _ := s.pool.Query(ctx, `SELECT `+sessionColumns+` FROM sessions
		WHERE project_id = $1 AND claude_session_id = $2 ORDER BY created_at LIMIT 1`, projectID, claudeSessionID)
	sess, err := pgx.CollectOneRow(rows, pgx.RowToStructByName[Session])
	if err != nil {
		return Session{}, fmt.Errorf("session by claude id %s: %w", claudeSessionID, notFound(err))
	}
	return sess, nil
}

// AdoptSession makes a Claude Code session that Parley did not start (found
// on disk) a Parley session of the project: already started, so its next
// run resumes it, with payloads (its imported transcript) as its first
// events, all in one transaction. A session adopted before gives
// ErrExists.
func (s *Store) AdoptSession(ctx context.Context, projectID int64, claudeSessionID, title, by string, userID int64, types []string, payloads []json.RawMessage) (Session, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return Session{}, fmt.Errorf("adopt session %s: %w", claudeSessionID, err)
	}
	defer tx.Rollback(ctx)
	// One adoption per CLI session: the lock serialises two callers racing.
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('parley.adopt.' || $1))`, claudeSessionID); err != nil {
		return Session{}, fmt.Errorf("adopt session %s: lock: %w", claudeSessionID, err)
	}
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM sessions WHERE project_id = $1 AND claude_session_id = $2)`,
		projectID, claudeSessionID).Scan(&exists); err != nil {
		return Session{}, fmt.Errorf("adopt session %s: %w", claudeSessionID, err)
	}
	if exists {
		return Session{}, fmt.Errorf("adopt session %s: %w", claudeSessionID, ErrExists)
	}
	rows, _ := tx.Query(ctx, `
		INSERT INTO sessions (id, project_id, claude_session_id, title, status, claude_started, created_by, created_by_user_id)
		VALUES ($1, $2, $3, $4, 'idle', true, $5, nullif($6, 0))
		RETURNING `+sessionColumns, uuid.NewString(), projectID, claudeSessionID, title, by, userID)
	sess, err := pgx.CollectOneRow(rows, pgx.RowToStructByName[Session])
	if pgErr := (*pgconn.PgError)(nil); errors.As(err, &pgErr) && pgErr.Code == "23505" {
		return Session{}, fmt.Errorf("adopt session %s: %w", claudeSessionID, ErrExists)
	}
	if err != nil {
		return Session{}, fmt.Errorf("adopt session %s: %w", claudeSessionID, err)
	}
	for i, p := range payloads {
		if _, err := appendEvent(ctx, tx, Event{SessionID: sess.ID, Seq: int64(i + 1), Type: types[i], Payload: p}); err != nil {
			return Session{}, fmt.Errorf("adopt session %s: %w", claudeSessionID, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return Session{}, fmt.Errorf("adopt session %s: commit: %w", claudeSessionID, err)
	}
	return sess, nil
}
