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

// ReconcileEvents returns what reconciling a session's log with Claude's
// transcript reads of it, in order: its assistant and user events, its
// runs' starts and ends, and of its last run only, the streamed events
// (the bulk of a log, needed just to close a reply cut off by a crash) and
// what tells its turns apart (prompts, results, turn starts, stops, asks
// and their deliveries), to go on with a turn a crash cut off.
func (s *Store) ReconcileEvents(ctx context.Context, sessionID string) ([]Event, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+eventColumns+` FROM events
		WHERE session_id = $1 AND (type IN ('assistant', 'user', 'run_started', 'run_ended')
			OR seq > coalesce((SELECT max(seq) FROM events WHERE session_id = $1 AND type = 'run_started'), 0)
				AND (type IN ('stream_event', 'prompt', 'result', 'interrupt', 'input_requested', 'input_delivered')
					OR type = 'system' AND payload->>'subtype' = 'init'
					OR type = 'notice' AND payload ? 'stops_turn'))
		ORDER BY seq`, sessionID)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[Event])
	if err != nil {
		return nil, fmt.Errorf("events of session %s to reconcile: %w", sessionID, err)
	}
	return list, nil
}
