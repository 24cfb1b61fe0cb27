package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// takeOverIdle bounds how long a takeover transaction may sit idle.
const takeOverIdle = 3 * time.Second

// takeOverHeld, set by tests only, is called with the takeover lock held.
var takeOverHeld func(replica string)

// TakeOver cleans up after replicas whose rows have lapsed (they died or
// lost the database), in one transaction that one replica at a time runs:
// their rows, leases and queued requests go; their open runs end with
// reason "replica lost", their pending inputs stay pending and get an
// "input_detached" event, so an answer resumes the session wherever it
// arrives; their sessions become waiting or idle. Runs of live replicas are
// never touched. It returns the lapsed replicas' ids and the number of
// sessions taken over.
func (s *Store) TakeOver(ctx context.Context) (dead []string, sessions int, err error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("take over: %w", err)
	}
	defer tx.Rollback(ctx)
	// A replica paused or cut off from the database in the middle of this
	// transaction would hold the takeover lock for as long as its
	// connection lives, and no replica could take any session over: its
	// connection is ended once the transaction sits idle that long.
	if _, err := tx.Exec(ctx, fmt.Sprintf(`SET LOCAL idle_in_transaction_session_timeout = %d`, takeOverIdle.Milliseconds())); err != nil {
		return nil, 0, fmt.Errorf("take over: %w", err)
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('parley.takeover'))`); err != nil {
		return nil, 0, fmt.Errorf("take over: lock: %w", err)
	}
	if takeOverHeld != nil {
		takeOverHeld(s.replica)
	}
	// Never this replica: it is running this very call (paused past its
	// lease, it renews it on its next heartbeat).
	rows, _ := tx.Query(ctx, `DELETE FROM replicas WHERE expires_at <= now() AND id <> $1 RETURNING id`, s.replica)
	if dead, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		return nil, 0, fmt.Errorf("take over: lapsed replicas: %w", err)
	}
	// Orphans: open runs of no live replica (or of none at all, from
	// before replicas), and leases of no live replica.
	if _, err := tx.Exec(ctx, `
		CREATE TEMP TABLE orphan_runs ON COMMIT DROP AS
		SELECT id, session_id FROM runs
		WHERE ended_at IS NULL AND (replica_id IS NULL OR replica_id NOT IN (SELECT id FROM replicas))`); err != nil {
		return nil, 0, fmt.Errorf("take over: orphan runs: %w", err)
	}
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM (SELECT session_id FROM orphan_runs
		UNION SELECT session_id FROM session_leases WHERE replica_id NOT IN (SELECT id FROM replicas)) s`).Scan(&sessions); err != nil {
		return nil, 0, fmt.Errorf("take over: count sessions: %w", err)
	}
	if _, err := tx.Exec(ctx, `
		WITH open AS (
			SELECT i.session_id, array_agg(i.id ORDER BY i.created_at, i.id) AS ids
			FROM inputs i JOIN orphan_runs r ON r.id = i.run_id
			WHERE i.status = 'pending'
			GROUP BY i.session_id
		)
		INSERT INTO events (session_id, seq, type, payload)
		SELECT o.session_id, coalesce((SELECT max(seq) FROM events WHERE session_id = o.session_id), 0) + 1,
			'input_detached', jsonb_build_object('input_ids', to_jsonb(o.ids), 'reason', $1::text)
		FROM open o`, lostReason); err != nil {
		return nil, 0, fmt.Errorf("take over: detach inputs: %w", err)
	}
	if _, err := tx.Exec(ctx, `UPDATE runs SET ended_at = now(), reason = $1
		WHERE id IN (SELECT id FROM orphan_runs)`, TakeOverReason); err != nil {
		return nil, 0, fmt.Errorf("take over: end runs: %w", err)
	}
	if _, err := tx.Exec(ctx, `
		UPDATE sessions s SET updated_at = now(),
			status = CASE WHEN EXISTS (SELECT 1 FROM inputs i WHERE i.session_id = s.id AND i.status = 'pending')
				THEN 'waiting' ELSE 'ended' END
		WHERE status IN ('running', 'waiting') AND (s.id IN (SELECT session_id FROM orphan_runs)
			OR s.id IN (SELECT session_id FROM session_leases WHERE replica_id NOT IN (SELECT id FROM replicas)))`); err != nil {
		return nil, 0, fmt.Errorf("take over: reset sessions: %w", err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM session_leases WHERE replica_id NOT IN (SELECT id FROM replicas)`); err != nil {
		return nil, 0, fmt.Errorf("take over: leases: %w", err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM cluster_requests
		WHERE done_at IS NULL AND replica_id NOT IN (SELECT id FROM replicas)`); err != nil {
		return nil, 0, fmt.Errorf("take over: requests: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, 0, fmt.Errorf("take over: commit: %w", err)
	}
	if len(dead) > 0 {
		s.takeOvers.Add(1)
	}
	return dead, sessions, nil
}

// TakeOvers counts this process's TakeOver calls that took stopped
// replicas over, whoever called them: a session leased on its next
// message may take over all of a dead replica's sessions, whose lost runs
// the cluster then reconciles.
func (s *Store) TakeOvers() int64 { return s.takeOvers.Load() }

// TakeOverReason is the reason TakeOver gives the runs it ends.
const TakeOverReason = "replica lost"

// lostReason is the reason given to users for inputs detached by TakeOver.
const lostReason = "the Parley replica running this session stopped"
