package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// The ways an answer reaches Claude (inputs.delivered_how).
const (
	DeliveredToolResult = "tool_result" // as the result of the tool call that asked
	DeliveredNewTurn    = "new_turn"    // as a new user turn quoting the ask
)

// ErrDelivered means the answer was already marked delivered.
var ErrDelivered = errors.New("answer already delivered")

// MarkDelivered records that the answer of input id reached Claude, how,
// and appends e (when e.Type is set), in one transaction. Exactly one call
// per input succeeds; later ones return ErrDelivered and append nothing,
// so an answer is never counted as delivered twice.
func (s *Store) MarkDelivered(ctx context.Context, id, how string, e Event) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("mark input %s delivered: %w", id, err)
	}
	defer tx.Rollback(ctx)
	tag, err := tx.Exec(ctx, `
		UPDATE inputs SET delivered_at = now(), delivered_how = $2
		WHERE id = $1 AND status IN ('answered', 'denied') AND delivered_at IS NULL`, id, how)
	if err != nil {
		return fmt.Errorf("mark input %s delivered: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("mark input %s delivered: %w", id, ErrDelivered)
	}
	if e.Type != "" {
		if _, err := appendEvent(ctx, tx, e); err != nil {
			return fmt.Errorf("mark input %s delivered: %w", id, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("mark input %s delivered: commit: %w", id, err)
	}
	return nil
}

// UndeliveredInputs returns the session's answered or refused inputs whose
// answer has not reached Claude yet, in the order they were answered.
func (s *Store) UndeliveredInputs(ctx context.Context, sessionID string) ([]Input, error) {
	rows, _ := s.pool.Query(ctx, `
		SELECT `+inputColumns+` FROM inputs
		WHERE session_id = $1 AND status IN ('answered', 'denied') AND delivered_at IS NULL
		ORDER BY answered_at, id`, sessionID)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[Input])
	if err != nil {
		return nil, fmt.Errorf("undelivered inputs of session %s: %w", sessionID, err)
	}
	return list, nil
}

// SessionsOwedAnswers returns the live (not archived) sessions that hold an
// answer not yet delivered to Claude, oldest answer first.
func (s *Store) SessionsOwedAnswers(ctx context.Context) ([]string, error) {
	rows, _ := s.pool.Query(ctx, `
		SELECT i.session_id FROM inputs i JOIN sessions s ON s.id = i.session_id
		WHERE i.status IN ('answered', 'denied') AND i.delivered_at IS NULL AND s.archived_at IS NULL
		GROUP BY i.session_id ORDER BY min(i.answered_at)`)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("sessions owed answers: %w", err)
	}
	return ids, nil
}
