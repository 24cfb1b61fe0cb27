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

// inboxColumns are an InboxInput's columns but detached, over inboxTables.
const inboxColumns = `i.id, i.session_id, coalesce(i.run_id, 0) AS run_id, i.kind, i.payload, i.status, i.answer,
	coalesce(i.answered_by, '') AS answered_by, i.answered_at, i.deadline, i.created_at,
	s.title AS session_title, p.id AS project_id, p.name AS project_name`

// inboxTables join each input to its session and project.
const inboxTables = `inputs i
	JOIN sessions s ON s.id = i.session_id
	JOIN projects p ON p.id = s.project_id`

// selectInbox selects InboxInput rows, detached when the run that asked
// has ended; callers add their joins, WHERE (i.status) and ORDER BY.
const selectInbox = `SELECT ` + inboxColumns + `,
		(r.id IS NULL OR r.ended_at IS NOT NULL) AS detached
	FROM ` + inboxTables + `
	LEFT JOIN runs r ON r.id = i.run_id`

// inbox runs a query that selects InboxInput rows and collects them.
func (s *Store) inbox(ctx context.Context, sql string, args ...any) ([]InboxInput, error) {
	rows, _ := s.pool.Query(ctx, sql, args...)
	return pgx.CollectRows(rows, pgx.RowToStructByName[InboxInput])
}

// PendingInputsIn returns the pending inputs of every session in the projects, oldest first.
func (s *Store) PendingInputsIn(ctx context.Context, projectIDs []int64) ([]InboxInput, error) {
	list, err := s.inbox(ctx, selectInbox+`
		WHERE i.status = 'pending' AND s.project_id = ANY($1)
		ORDER BY i.created_at, i.id`, projectIDs)
	if err != nil {
		return nil, fmt.Errorf("pending inputs of projects %v: %w", projectIDs, err)
	}
	return list, nil
}

// ExpiredInputsIn returns the inputs of the projects that expired since
// since, oldest first: the inbox shows them so that an ask nobody answered
// does not vanish without a word.
func (s *Store) ExpiredInputsIn(ctx context.Context, projectIDs []int64, since time.Time) ([]InboxInput, error) {
	list, err := s.inbox(ctx, `SELECT `+inboxColumns+`, true AS detached
		FROM `+inboxTables+`
		WHERE i.status = 'expired' AND i.answered_at >= $2 AND s.project_id = ANY($1)
		ORDER BY i.created_at, i.id`, projectIDs, since)
	if err != nil {
		return nil, fmt.Errorf("expired inputs of projects %v: %w", projectIDs, err)
	}
	return list, nil
}
