package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Event is one entry of a session's event log, numbered by Seq from 1 without gaps.
// The run's select loop is the single writer of a session's log.
type Event struct {
	SessionID string          `db:"session_id"`
	Seq       int64           `db:"seq"`
	Type      string          `db:"type"`
	Payload   json.RawMessage `db:"payload"`
	CreatedAt time.Time       `db:"created_at"`
}

const eventColumns = `session_id, seq, type, payload, created_at`

// querier is what a pool and a transaction have in common.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// LastSeq returns the highest seq in the session's log, 0 when the log is empty.
func (s *Store) LastSeq(ctx context.Context, sessionID string) (int64, error) {
	var seq int64
	err := s.pool.QueryRow(ctx,
		`SELECT coalesce(max(seq), 0) FROM events WHERE session_id = $1`, sessionID).Scan(&seq)
	if err != nil {
		return 0, fmt.Errorf("last seq of session %s: %w", sessionID, err)
	}
	return seq, nil
}

// AppendEvent appends e to its session's log. A seq that is already taken is an error
// (a unique violation), never an overwrite.
func (s *Store) AppendEvent(ctx context.Context, e Event) error {
	_, err := appendEvent(ctx, s.pool, e)
	return err
}

// appendEvent inserts e and returns it with created_at filled in.
func appendEvent(ctx context.Context, q querier, e Event) (Event, error) {
	payload := e.Payload
	if len(payload) == 0 {
		payload = json.RawMessage(`{}`)
	}
	rows, _ := q.Query(ctx, `
		INSERT INTO events (session_id, seq, type, payload) VALUES ($1, $2, $3, $4)
		RETURNING `+eventColumns, e.SessionID, e.Seq, e.Type, payload)
	got, err := pgx.CollectOneRow(rows, pgx.RowToStructByName[Event])
	if err != nil {
		return Event{}, fmt.Errorf("insert event %d of session %s: %w", e.Seq, e.SessionID, err)
	}
	return got, nil
}

// EventsAfter returns the session's events with seq > after in ascending order, at most limit
// of them; limit <= 0 means all.
func (s *Store) EventsAfter(ctx context.Context, sessionID string, after int64, limit int) ([]Event, error) {
	sql := `SELECT ` + eventColumns + ` FROM events WHERE session_id = $1 AND seq > $2 ORDER BY seq`
	args := []any{sessionID, after}
	if limit > 0 {
		sql += ` LIMIT $3`
		args = append(args, limit)
	}
	rows, _ := s.pool.Query(ctx, sql, args...)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[Event])
	if err != nil {
		return nil, fmt.Errorf("events of session %s after %d: %w", sessionID, after, err)
	}
	return list, nil
}

// AppendEvents appends evs, consecutive events of one session, with one
// statement: a run loop's batch costs one round trip to Postgres and one
// commit however many lines it holds (a COPY in a transaction took four,
// and each waits its turn for a CPU on a busy server). The statement's
// text is the same for any batch size, so it is prepared once per
// connection. A seq already taken fails the whole batch.
func (s *Store) AppendEvents(ctx context.Context, evs []Event) error {
	if len(evs) == 0 {
		return nil
	}
	if len(evs) == 1 {
		return s.AppendEvent(ctx, evs[0])
	}
	return appendEvents(ctx, s.pool, evs)
}

// execer runs a statement, in a pool or a transaction.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// appendEvents is AppendEvents on q.
func appendEvents(ctx context.Context, q execer, evs []Event) error {
	seqs := make([]int64, len(evs))
	types := make([]string, len(evs))
	payloads := make([]string, len(evs))
	created := make([]time.Time, len(evs))
	now := time.Now()
	for i, e := range evs {
		seqs[i], types[i], payloads[i], created[i] = e.Seq, e.Type, string(e.Payload), e.CreatedAt
		if len(e.Payload) == 0 {
			payloads[i] = `{}`
		}
		if e.CreatedAt.IsZero() {
			created[i] = now
		}
	}
	if _, err := q.Exec(ctx, `
		INSERT INTO events (session_id, seq, type, payload, created_at)
		SELECT $1, e.seq, e.type, e.payload::jsonb, e.created_at
		FROM unnest($2::bigint[], $3::text[], $4::text[], $5::timestamptz[]) AS e(seq, type, payload, created_at)`,
		evs[0].SessionID, seqs, types, payloads, created); err != nil {
		return fmt.Errorf("append events %d..%d of session %s: %w", evs[0].Seq, evs[len(evs)-1].Seq, evs[0].SessionID, err)
	}
	return nil
}

// EventsBetween returns the session's events with first <= seq <= last, in
// order; with types, only those of these types.
func (s *Store) EventsBetween(ctx context.Context, sessionID string, first, last int64, types ...string) ([]Event, error) {
	where, args := "", []any{sessionID, first, last}
	if len(types) > 0 {
		where, args = ` AND type = ANY($4)`, append(args, types)
	}
	rows, _ := s.pool.Query(ctx, `SELECT `+eventColumns+` FROM events
		WHERE session_id = $1 AND seq BETWEEN $2 AND $3`+where+` ORDER BY seq`, args...)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[Event])
	if err != nil {
		return nil, fmt.Errorf("events %d..%d of session %s: %w", first, last, sessionID, err)
	}
	return list, nil
}

// CompletedMessages returns the ids of the top-level assistant messages in
// the session's log after seq: a replay shows these whole instead of
// re-sending their streamed deltas. It reads ids only, never the texts.
func (s *Store) CompletedMessages(ctx context.Context, sessionID string, after int64) (map[string]bool, error) {
	rows, _ := s.pool.Query(ctx, `SELECT DISTINCT payload -> 'message' ->> 'id' FROM events
		WHERE session_id = $1 AND seq > $2 AND type = 'assistant'
			AND jsonb_typeof(payload -> 'parent_tool_use_id') IS DISTINCT FROM 'string'
			AND payload -> 'message' ->> 'id' IS NOT NULL`, sessionID, after)
	set, err := collectSet(rows)
	if err != nil {
		return nil, fmt.Errorf("completed messages of session %s: %w", sessionID, err)
	}
	return set, nil
}
