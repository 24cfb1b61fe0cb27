package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// InboxInput is a pending input with where it was asked.
type InboxInput struct {
	Input
	SessionTitle string `db:"session_title"`
	ProjectID    int64  `db:"project_id"`
	ProjectName  string `db:"project_name"`
	// Detached: the run that asked has ended, so an answer resumes the session.
	Detached bool `db:"detached"`
}

// PendingInputsIn returns the pending inputs of every session in the projects, oldest first.
func (s *Store) PendingInputsIn(ctx context.Context, projectIDs []int64) ([]InboxInput, error) {
	rows, _ := s.pool.Query(ctx, `
		SELECT i.id, i.session_id, coalesce(i.run_id, 0) AS run_id, i.kind, i.payload, i.status, i.answer,
			coalesce(i.answered_by, '') AS answered_by, i.answered_at, i.deadline, i.created_at,
			s.title AS session_title, p.id AS project_id, p.name AS project_name,
			(r.id IS NULL OR r.ended_at IS NOT NULL) AS detached
		FROM inputs i
		JOIN sessions s ON s.id = i.session_id
		JOIN projects p ON p.id = s.project_id
		LEFT JOIN runs r ON r.id = i.run_id
		WHERE i.status = 'pending' AND s.project_id = ANY($1)
		ORDER BY i.created_at, i.id`, projectIDs)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[InboxInput])
	if err != nil {
		return nil, fmt.Errorf("pending inputs of projects %v: %w", projectIDs, err)
	}
	return list, nil
}

// ExpiredInputsIn returns the inputs of the projects that expired since
// since, oldest first: the inbox shows them so that an ask nobody answered
// does not vanish without a word.
func (s *Store) ExpiredInputsIn(ctx context.Context, projectIDs []int64, since time.Time) ([]InboxInput, error) {
	rows, _ := s.pool.Query(ctx, `
		SELECT i.id, i.session_id, coalesce(i.run_id, 0) AS run_id, i.kind, i.payload, i.status, i.answer,
			coalesce(i.answered_by, '') AS answered_by, i.answered_at, i.deadline, i.created_at,
			s.title AS session_title, p.id AS project_id, p.name AS project_name, true AS detached
		FROM inputs i
		JOIN sessions s ON s.id = i.session_id
		JOIN projects p ON p.id = s.project_id
		WHERE i.status = 'expired' AND i.answered_at >= $2 AND s.project_id = ANY($1)
		ORDER BY i.created_at, i.id`, projectIDs, since)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[InboxInput])
	if err != nil {
		return nil, fmt.Errorf("expired inputs of projects %v: %w", projectIDs, err)
	}
	return list, nil
}
