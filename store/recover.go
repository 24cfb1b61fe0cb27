package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// LostRun is a run a session's log shows as live while no run of the
// session is open: its process went with a Parley that crashed, and nobody
// recorded the end.
type LostRun struct {
	SessionID string `db:"id"`
	// StartSeq is the seq of its run_started event: a run that starts
	// later is not it.
	StartSeq int64 `db:"start_seq"`
}

// LostRuns returns the lost runs (LostRun), oldest session first.
func (s *Store) LostRuns(ctx context.Context) ([]LostRun, error) {
	rows, _ := s.pool.Query(ctx, `
		SELECT id, start_seq FROM (
			SELECT s.id, s.updated_at,
				coalesce((SELECT max(seq) FROM events e WHERE e.session_id = s.id AND e.type = 'run_started'), 0) AS start_seq,
				coalesce((SELECT max(seq) FROM events e WHERE e.session_id = s.id AND e.type = 'run_ended'), 0) AS end_seq
			FROM sessions s
			WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.session_id = s.id AND r.ended_at IS NULL)) l
		WHERE start_seq > end_seq
		ORDER BY updated_at`)
	runs, err := pgx.CollectRows(rows, pgx.RowToStructByName[LostRun])
	if err != nil {
		return nil, fmt.Errorf("sessions with lost runs: %w", err)
	}
	return runs, nil
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
				AND (type IN ('stream_event', 'prompt', 'turn_resent', 'result', 'interrupt',
						'input_requested', 'input_resolved', 'input_delivered', 'input_detached')
					OR type = 'system' AND payload->>'subtype' = 'init'
					OR type = 'notice' AND payload ? 'stops_turn'))
		ORDER BY seq`, sessionID)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[Event])
	if err != nil {
		return nil, fmt.Errorf("events of session %s to reconcile: %w", sessionID, err)
	}
	return list, nil
}
