package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// LostRunSessions returns the sessions whose log shows a run as live (a
// run_started with no run_ended after it) while no run of theirs is open:
// their process went with a Parley that crashed, and nobody recorded the end.
func (s *Store) LostRunSessions(ctx context.Context) ([]string, error) {
	rows, _ := s.pool.Query(ctx, `
		SELECT s.id FROM sessions s
		WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.session_id = s.id AND r.ended_at IS NULL)
			AND coalesce((SELECT max(seq) FROM events e WHERE e.session_id = s.id AND e.type = 'run_started'), 0) >
				coalesce((SELECT max(seq) FROM events e WHERE e.session_id = s.id AND e.type = 'run_ended'), 0)
		ORDER BY s.updated_at`)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("sessions with lost runs: %w", err)
	}
	return ids, nil
}
