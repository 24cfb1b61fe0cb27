package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
)

// Request is a prompt, answer or stop queued for the replica that owns a
// session.
type Request struct {
	ID        int64           `db:"id"`
	ReplicaID string          `db:"replica_id"`
	SessionID string          `db:"session_id"`
	Kind      string          `db:"kind"`
	Payload   json.RawMessage `db:"payload"`
	Error     string          `db:"error"`
	Done      bool            `db:"done"`
}

const requestColumns = `id, replica_id, session_id, kind, payload, error, done_at IS NOT NULL AS done`

// QueueRequest stores a request for replica and tells it, on commit.
func (s *Store) QueueRequest(ctx context.Context, replica, sessionID, kind string, payload json.RawMessage) (int64, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("queue %s request: %w", kind, err)
	}
	defer tx.Rollback(ctx)
	var id int64
	if err := tx.QueryRow(ctx, `INSERT INTO cluster_requests (replica_id, session_id, kind, payload)
		VALUES ($1, $2, $3, $4) RETURNING id`, replica, sessionID, kind, payload).Scan(&id); err != nil {
		return 0, fmt.Errorf("queue %s request: %w", kind, err)
	}
	if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, RequestsChannel, replica+" "+strconv.FormatInt(id, 10)); err != nil {
		return 0, fmt.Errorf("queue %s request: notify: %w", kind, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("queue %s request: commit: %w", kind, err)
	}
	return id, nil
}

// TakeRequest claims request id for this replica, exactly once; a request
// already taken, or not this replica's, is ErrNotFound.
func (s *Store) TakeRequest(ctx context.Context, id int64) (Request, error) {
	rows, _ := s.pool.Query(ctx, `UPDATE cluster_requests SET taken_at = now()
		WHERE id = $1 AND replica_id = $2 AND taken_at IS NULL RETURNING `+requestColumns, id, s.replica)
	r, err := pgx.CollectOneRow(rows, pgx.RowToStructByName[Request])
	if err != nil {
		return Request{}, fmt.Errorf("take request %d: %w", id, notFound(err))
	}
	return r, nil
}

// FinishRequest records the outcome of request id ("" = done) and tells
// the sender, on commit.
func (s *Store) FinishRequest(ctx context.Context, id int64, outcome string) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("finish request %d: %w", id, err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `UPDATE cluster_requests SET done_at = now(), error = $2 WHERE id = $1`, id, outcome); err != nil {
		return fmt.Errorf("finish request %d: %w", id, err)
	}
	if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, RepliesChannel, strconv.FormatInt(id, 10)); err != nil {
		return fmt.Errorf("finish request %d: notify: %w", id, err)
	}
	return tx.Commit(ctx)
}

// GetRequest returns request id; a request removed because its replica
// lapsed is ErrNotFound.
func (s *Store) GetRequest(ctx context.Context, id int64) (Request, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+requestColumns+` FROM cluster_requests WHERE id = $1`, id)
	r, err := pgx.CollectOneRow(rows, pgx.RowToStructByName[Request])
	if err != nil {
		return Request{}, fmt.Errorf("get request %d: %w", id, notFound(err))
	}
	return r, nil
}

// DeleteRequest removes a finished request.
func (s *Store) DeleteRequest(ctx context.Context, id int64) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM cluster_requests WHERE id = $1`, id); err != nil {
		return fmt.Errorf("delete request %d: %w", id, err)
	}
	return nil
}

// Listen holds one connection of its own LISTENing on channels and calls f
// with each notification's channel and payload until ctx ends or the
// connection fails. ready is called once the LISTENs are in place.
func (s *Store) Listen(ctx context.Context, channels []string, ready func(), f func(channel, payload string)) error {
	// A connection of its own, outside the pools: it holds LISTENs.
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	for _, ch := range channels {
		if _, err := conn.Exec(ctx, `LISTEN `+pgx.Identifier{ch}.Sanitize()); err != nil {
			return fmt.Errorf("listen %s: %w", ch, err)
		}
	}
	ready()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			if errors.Is(err, context.Canceled) || ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("wait for notification: %w", err)
		}
		f(n.Channel, n.Payload)
	}
}
