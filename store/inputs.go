package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Input is a pending ask for a human: a question, a tool permission or a plan to approve.
// Status is pending until ResolveInput moves it, exactly once, to answered, denied,
// timed_out, cancelled or expired.
type Input struct {
	ID         string          `db:"id"`
	SessionID  string          `db:"session_id"`
	RunID      int64           `db:"run_id"`
	Kind       string          `db:"kind"`
	Payload    json.RawMessage `db:"payload"`
	Status     string          `db:"status"`
	Answer     json.RawMessage `db:"answer"`
	AnsweredBy string          `db:"answered_by"`
	AnsweredAt *time.Time      `db:"answered_at"`
	Deadline   *time.Time      `db:"deadline"`
	CreatedAt  time.Time       `db:"created_at"`
}

// NULL run_id and answered_by read as zero values; answer and the times read as nil.
const inputColumns = `id, session_id, coalesce(run_id, 0) AS run_id, kind, payload, status, answer,
	coalesce(answered_by, '') AS answered_by, answered_at, deadline, created_at`

// OpenInput stores in as a pending input and appends e to its session's log, in one
// transaction. A zero in.RunID stores NULL; an empty in.ID gets a new uuid.
func (s *Store) OpenInput(ctx context.Context, in Input, e Event) error {
	if in.ID == "" {
		in.ID = uuid.NewString()
	}
	payload := in.Payload
	if len(payload) == 0 {
		payload = json.RawMessage(`{}`)
	}
	var runID *int64
	if in.RunID != 0 {
		runID = &in.RunID
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("open input %s: %w", in.ID, err)
	}
	defer tx.Rollback(ctx)
	_, err = tx.Exec(ctx, `
		INSERT INTO inputs (id, session_id, run_id, kind, payload, status, deadline)
		VALUES ($1, $2, $3, $4, $5, 'pending', $6)`,
		in.ID, in.SessionID, runID, in.Kind, payload, in.Deadline)
	if err != nil {
		return fmt.Errorf("open input %s: %w", in.ID, err)
	}
	if _, err := appendEvent(ctx, tx, e); err != nil {
		return fmt.Errorf("open input %s: %w", in.ID, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("open input %s: commit: %w", in.ID, err)
	}
	return nil
}

// ResolveInput moves the pending input id to status with answer and by, and appends e, in
// one transaction. It succeeds for exactly one caller: the rest get ErrNotPending (or
// ErrNotFound when there is no such input), and e is not appended for them.
func (s *Store) ResolveInput(ctx context.Context, id, status string, answer json.RawMessage, by string, e Event) (Input, error) {
	if uuid.Validate(id) != nil {
		return Input{}, fmt.Errorf("resolve input %s: %w", id, ErrNotFound)
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return Input{}, fmt.Errorf("resolve input %s: %w", id, err)
	}
	defer tx.Rollback(ctx)
	// Under READ COMMITTED a concurrent UPDATE of the same row waits for the first to commit,
	// then re-checks "status = 'pending'" against the new row version and matches nothing.
	rows, _ := tx.Query(ctx, `
		UPDATE inputs SET status = $2, answer = $3, answered_by = $4, answered_at = now()
		WHERE id = $1 AND status = 'pending'
		RETURNING `+inputColumns, id, status, nullJSON(answer), by)
	in, err := pgx.CollectOneRow(rows, pgx.RowToStructByName[Input])
	if errors.Is(err, pgx.ErrNoRows) {
		return Input{}, fmt.Errorf("resolve input %s: %w", id, missingOrResolved(ctx, tx, id))
	}
	if err != nil {
		return Input{}, fmt.Errorf("resolve input %s: %w", id, err)
	}
	if _, err := appendEvent(ctx, tx, e); err != nil {
		return Input{}, fmt.Errorf("resolve input %s: %w", id, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return Input{}, fmt.Errorf("resolve input %s: commit: %w", id, err)
	}
	return in, nil
}

// missingOrResolved tells why an UPDATE of a pending input matched no row.
func missingOrResolved(ctx context.Context, tx pgx.Tx, id string) error {
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM inputs WHERE id = $1)`, id).Scan(&exists); err != nil {
		return err
	}
	if !exists {
		return ErrNotFound
	}
	return ErrNotPending
}

// GetInput returns the input with id, or ErrNotFound.
func (s *Store) GetInput(ctx context.Context, id string) (Input, error) {
	if uuid.Validate(id) != nil {
		return Input{}, fmt.Errorf("get input %s: %w", id, ErrNotFound)
	}
	rows, _ := s.pool.Query(ctx, `SELECT `+inputColumns+` FROM inputs WHERE id = $1`, id)
	in, err := pgx.CollectOneRow(rows, pgx.RowToStructByName[Input])
	if err != nil {
		return Input{}, fmt.Errorf("get input %s: %w", id, notFound(err))
	}
	return in, nil
}

// PendingInputs returns the session's pending inputs, oldest first.
func (s *Store) PendingInputs(ctx context.Context, sessionID string) ([]Input, error) {
	rows, _ := s.pool.Query(ctx, `
		SELECT `+inputColumns+` FROM inputs
		WHERE session_id = $1 AND status = 'pending'
		ORDER BY created_at, id`, sessionID)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[Input])
	if err != nil {
		return nil, fmt.Errorf("pending inputs of session %s: %w", sessionID, err)
	}
	return list, nil
}

// nullJSON turns an empty answer into SQL NULL rather than invalid JSON.
func nullJSON(m json.RawMessage) any {
	if len(m) == 0 {
		return nil
	}
	return m
}
