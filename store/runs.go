package store

import (
	"context"
	"fmt"
)

// StartRun records that a claude process with pid started for the session and returns the
// run's id.
func (s *Store) StartRun(ctx context.Context, sessionID string, pid int) (int64, error) {
	var id int64
	err := s.pool.QueryRow(ctx,
		`INSERT INTO runs (session_id, pid) VALUES ($1, $2) RETURNING id`, sessionID, pid).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("start run of session %s: %w", sessionID, err)
	}
	return id, nil
}

// EndRun records how the run ended. A run that has already ended keeps its first ending.
func (s *Store) EndRun(ctx context.Context, runID int64, exitCode int, reason string) error {
	tag, err := s.pool.Exec(ctx, `
		UPDATE runs SET ended_at = now(), exit_code = $2, reason = $3
		WHERE id = $1 AND ended_at IS NULL`, runID, exitCode, reason)
	if err != nil {
		return fmt.Errorf("end run %d: %w", runID, err)
	}
	if tag.RowsAffected() == 0 {
		var exists bool
		if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM runs WHERE id = $1)`, runID).Scan(&exists); err != nil {
			return fmt.Errorf("end run %d: %w", runID, err)
		}
		if !exists {
			return fmt.Errorf("end run %d: %w", runID, ErrNotFound)
		}
	}
	return nil
}

// RecoverAfterRestart cleans up after a server that stopped with runs in flight, in one
// transaction: open runs end with reason "server restarted", every pending input expires with
// an "input_resolved" event at its session's next seq, and running or waiting sessions go
// back to idle. It returns the number of inputs expired.
//
// It assumes no run is live anywhere, so call it at startup before any run starts.
func (s *Store) RecoverAfterRestart(ctx context.Context) (int, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("recover after restart: %w", err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `
		UPDATE runs SET ended_at = now(), reason = 'server restarted'
		WHERE ended_at IS NULL`); err != nil {
		return 0, fmt.Errorf("recover after restart: end runs: %w", err)
	}
	// Expire and log in one statement: each expired input gets the next seq of its session,
	// numbered in the order the inputs were created.
	tag, err := tx.Exec(ctx, `
		WITH expired AS (
			UPDATE inputs SET status = 'expired', answered_at = now()
			WHERE status = 'pending'
			RETURNING id, session_id, created_at
		), numbered AS (
			SELECT e.id, e.session_id,
				coalesce((SELECT max(seq) FROM events WHERE session_id = e.session_id), 0)
				+ row_number() OVER (PARTITION BY e.session_id ORDER BY e.created_at, e.id) AS seq
			FROM expired e
		)
		INSERT INTO events (session_id, seq, type, payload)
		SELECT session_id, seq, 'input_resolved',
			jsonb_build_object('input_id', id, 'status', 'expired', 'reason', $1::text)
		FROM numbered`, restartReason)
	if err != nil {
		return 0, fmt.Errorf("recover after restart: expire inputs: %w", err)
	}
	if _, err := tx.Exec(ctx, `
		UPDATE sessions SET status = 'idle', updated_at = now()
		WHERE status IN ('running', 'waiting')`); err != nil {
		return 0, fmt.Errorf("recover after restart: reset sessions: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("recover after restart: commit: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// restartReason is the reason given to users for inputs expired by RecoverAfterRestart.
const restartReason = "Parley restarted"
