package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// StartRun records that a claude process with pid started for the session and returns the
// run's id.
func (s *Store) StartRun(ctx context.Context, sessionID string, pid int) (int64, error) {
	var id int64
	err := s.pool.QueryRow(ctx,
		`INSERT INTO runs (session_id, pid, replica_id) VALUES ($1, $2, $3) RETURNING id`, sessionID, pid, s.replica).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("start run of session %s: %w", sessionID, err)
	}
	return id, nil
}

// TakenOverRuns returns which of the runs ids another replica's takeover
// ended: a replica whose lease lapsed finds the runs taken over meanwhile.
// A run that ended on its own keeps its first ending (EndRun), so it is
// never among them.
func (s *Store) TakenOverRuns(ctx context.Context, ids []int64) ([]int64, error) {
	rows, _ := s.pool.Query(ctx, `SELECT id FROM runs WHERE id = ANY($1) AND ended_at IS NOT NULL AND reason = $2`,
		ids, TakeOverReason)
	ended, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("ended runs: %w", err)
	}
	return ended, nil
}

// HasOpenRun says whether a run of the session, on any replica, has not
// ended.
func (s *Store) HasOpenRun(ctx context.Context, sessionID string) (bool, error) {
	var open bool
	if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM runs WHERE session_id = $1 AND ended_at IS NULL)`,
		sessionID).Scan(&open); err != nil {
		return false, fmt.Errorf("open runs of session %s: %w", sessionID, err)
	}
	return open, nil
}

// OpenRun returns the id of the session's newest run not yet ended, or 0.
func (s *Store) OpenRun(ctx context.Context, sessionID string) (int64, error) {
	var id int64
	if err := s.pool.QueryRow(ctx, `SELECT coalesce(max(id), 0) FROM runs WHERE session_id = $1 AND ended_at IS NULL`,
		sessionID).Scan(&id); err != nil {
		return 0, fmt.Errorf("open run of session %s: %w", sessionID, err)
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
// transaction: open runs end with reason "server restarted"; pending inputs stay pending (an
// answer resumes the session), and those whose run was still open get an "input_detached" event
// at their session's next seq, so pages say the answer will resume the session; running or
// waiting sessions become waiting if they have a pending input, else ended. It returns the number
// of inputs detached.
//
// It assumes no run is live anywhere, so call it at startup before any run starts.
func (s *Store) RecoverAfterRestart(ctx context.Context) (int, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("recover after restart: %w", err)
	}
	defer tx.Rollback(ctx)
	var n int
	err = tx.QueryRow(ctx, `
		WITH open AS (
			SELECT i.session_id, array_agg(i.id ORDER BY i.created_at, i.id) AS ids
			FROM inputs i JOIN runs r ON r.id = i.run_id
			WHERE i.status = 'pending' AND r.ended_at IS NULL
			GROUP BY i.session_id
		), logged AS (
			INSERT INTO events (session_id, seq, type, payload)
			SELECT o.session_id, coalesce((SELECT max(seq) FROM events WHERE session_id = o.session_id), 0) + 1,
				'input_detached', jsonb_build_object('input_ids', to_jsonb(o.ids), 'reason', $1::text)
			FROM open o
			RETURNING 1
		)
		SELECT coalesce(sum(cardinality(ids)), 0) FROM open`, restartReason).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("recover after restart: detach inputs: %w", err)
	}
	if _, err := tx.Exec(ctx, `
		UPDATE runs SET ended_at = now(), reason = 'server restarted'
		WHERE ended_at IS NULL`); err != nil {
		return 0, fmt.Errorf("recover after restart: end runs: %w", err)
	}
	if _, err := tx.Exec(ctx, `
		UPDATE sessions s SET updated_at = now(),
			status = CASE WHEN EXISTS (SELECT 1 FROM inputs i WHERE i.session_id = s.id AND i.status = 'pending')
				THEN 'waiting' ELSE 'ended' END
		WHERE status IN ('running', 'waiting')`); err != nil {
		return 0, fmt.Errorf("recover after restart: reset sessions: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("recover after restart: commit: %w", err)
	}
	return n, nil
}

// restartReason is the reason given to users for inputs detached by RecoverAfterRestart.
const restartReason = "Parley restarted"
