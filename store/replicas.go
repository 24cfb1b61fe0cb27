package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// EventsChannel is the NOTIFY channel on which every insert into the log
// announces "session_id first_seq last_seq application_name".
const EventsChannel = "parley_events"

// RequestsChannel carries "replica_id request_id" for a request queued to
// the replica that owns a session; RepliesChannel carries the request id
// once the owner has carried it out.
const (
	RequestsChannel = "parley_requests"
	RepliesChannel  = "parley_replies"
)

// Heartbeat registers this replica, or keeps its row alive, until ttl from
// now. It reports false when the row had lapsed and been removed by another
// replica (which then took this replica's sessions over).
func (s *Store) Heartbeat(ctx context.Context, dataDir string, ttl time.Duration) (alive bool, err error) {
	tag, err := s.pool.Exec(ctx, `UPDATE replicas SET expires_at = now() + $2 * interval '1 millisecond' WHERE id = $1`,
		s.replica, ttl.Milliseconds())
	if err != nil {
		return false, fmt.Errorf("heartbeat: %w", err)
	}
	if tag.RowsAffected() == 1 {
		return true, nil
	}
	_, err = s.pool.Exec(ctx, `INSERT INTO replicas (id, data_dir, expires_at)
		VALUES ($1, $2, now() + $3 * interval '1 millisecond')`, s.replica, dataDir, ttl.Milliseconds())
	if err != nil {
		return false, fmt.Errorf("register replica: %w", err)
	}
	return false, nil
}

// LiveReplicas returns the ids of the replicas whose rows have not lapsed.
func (s *Store) LiveReplicas(ctx context.Context) ([]string, error) {
	rows, _ := s.pool.Query(ctx, `SELECT id FROM replicas WHERE expires_at > now() ORDER BY id`)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("live replicas: %w", err)
	}
	return ids, nil
}

// LeaveCluster removes this replica's row and its leases: its sessions are
// free for any replica to take on their next message.
func (s *Store) LeaveCluster(ctx context.Context) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("leave cluster: %w", err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `DELETE FROM session_leases WHERE replica_id = $1`, s.replica); err != nil {
		return fmt.Errorf("leave cluster: %w", err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM replicas WHERE id = $1`, s.replica); err != nil {
		return fmt.Errorf("leave cluster: %w", err)
	}
	return tx.Commit(ctx)
}

// AcquireLease makes this replica the owner of the session unless a live
// replica owns it (or, while this replica drains, another live replica
// that does not), and returns the owner's id. A lease of a lapsed replica
// is taken over: the sweep recovers its runs first (see TakeOver).
func (s *Store) AcquireLease(ctx context.Context, sessionID string) (string, error) {
	var owner string
	err := s.pool.QueryRow(ctx, `SELECT l.replica_id FROM session_leases l
		JOIN replicas r ON r.id = l.replica_id AND r.expires_at > now()
		WHERE l.session_id = $1`, sessionID).Scan(&owner)
	if err == nil {
		return owner, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("lease of session %s: %w", sessionID, err)
	}
	if _, _, err := s.TakeOver(ctx); err != nil {
		return "", err
	}
	// A replica that is draining (shutting down) leases the session to a
	// live replica that is not, when there is one.
	err = s.pool.QueryRow(ctx, `INSERT INTO session_leases (session_id, replica_id)
		SELECT $1, coalesce(
			(SELECT id FROM replicas WHERE id = $2 AND NOT draining),
			(SELECT id FROM replicas WHERE NOT draining AND expires_at > now() ORDER BY random() LIMIT 1),
			$2)
		ON CONFLICT (session_id) DO UPDATE SET replica_id = session_leases.replica_id
		RETURNING replica_id`, sessionID, s.replica).Scan(&owner)
	if err != nil {
		return "", fmt.Errorf("acquire lease of session %s: %w", sessionID, err)
	}
	return owner, nil
}

// Owner returns the live replica that owns the session, or "" when none does.
func (s *Store) Owner(ctx context.Context, sessionID string) (string, error) {
	var owner string
	err := s.pool.QueryRow(ctx, `SELECT l.replica_id FROM session_leases l
		JOIN replicas r ON r.id = l.replica_id AND r.expires_at > now()
		WHERE l.session_id = $1`, sessionID).Scan(&owner)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("owner of session %s: %w", sessionID, err)
	}
	return owner, nil
}

// ReleaseLease gives up this replica's lease of the session.
func (s *Store) ReleaseLease(ctx context.Context, sessionID string) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM session_leases WHERE session_id = $1 AND replica_id = $2`, sessionID, s.replica)
	if err != nil {
		return fmt.Errorf("release lease of session %s: %w", sessionID, err)
	}
	return nil
}
