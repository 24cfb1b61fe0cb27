package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// CreateSessionWithIDs creates an idle session in the project, by the
// user, with the ids a process started ahead for it already has (package
// warm): Parley's session id and the CLI's.
func (s *Store) CreateSessionWithIDs(ctx context.Context, projectID int64, id, claudeID, title, by string, userID int64) (Session, error) {
	rows, _ := s.pool.Query(ctx, `
		INSERT INTO sessions (id, project_id, claude_session_id, title, status, created_by, created_by_user_id)
		VALUES ($1, $2, $3, $4, 'idle', $5, $6)
		RETURNING `+sessionColumns,
		id, projectID, claudeID, title, by, userID)
	sess, err := pgx.CollectOneRow(rows, pgx.RowToStructByName[Session])
	if err != nil {
		return Session{}, fmt.Errorf("create session %s in project %d: %w", id, projectID, err)
	}
	return sess, nil
}
