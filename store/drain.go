package store

import (
	"context"
	"fmt"
)

// HandoverChannel carries "session_id replica_id" when a replica that is
// shutting down hands a live session over: the first other replica to
// take its lease resumes it at once.
const HandoverChannel = "parley_handover"

// StartDraining marks this replica as shutting down, so no session is
// leased to it any more (see AcquireLease), and gives up its leases of
// every session but keep (those whose process still runs here): any
// replica takes them on their next message.
func (s *Store) StartDraining(ctx context.Context, keep []string) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("start draining: %w", err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `UPDATE replicas SET draining = true WHERE id = $1`, s.replica); err != nil {
		return fmt.Errorf("start draining: %w", err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM session_leases WHERE replica_id = $1 AND NOT (session_id::text = ANY($2))`,
		s.replica, keep); err != nil {
		return fmt.Errorf("start draining: release idle leases: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("start draining: %w", err)
	}
	return nil
}

// HandOver gives up this replica's leases of the sessions and the
// prompts and answers of theirs that waited in the queue here, and tells the
// other replicas (NOTIFY on HandoverChannel, on commit), so one of them
// takes each over at once. The sessions' runs here must have ended.
func (s *Store) HandOver(ctx context.Context, sessionIDs []string) error {
	if len(sessionIDs) == 0 {
		return nil
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("hand over: %w", err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `DELETE FROM session_leases WHERE replica_id = $1 AND session_id::text = ANY($2)`,
		s.replica, sessionIDs); err != nil {
		return fmt.Errorf("hand over: release leases: %w", err)
	}
	// What waited in the queue here goes with the sessions: the replica that
	// takes each over sends it on (see ClaimQueue).
	if _, err := tx.Exec(ctx, `UPDATE session_line SET replica_id = '' WHERE replica_id = $1 AND session_id::text = ANY($2)`,
		s.replica, sessionIDs); err != nil {
		return fmt.Errorf("hand over: release the line: %w", err)
	}
	for _, id := range sessionIDs {
		if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, HandoverChannel, id+" "+s.replica); err != nil {
			return fmt.Errorf("hand over session %s: %w", id, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("hand over: %w", err)
	}
	return nil
}
