package store

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// QueueItem is a prompt or an answer waiting in the queue for a claude slot
// (table session_line): kept until its run has it, so that a restart, a
// crash or a shutdown with no other replica does not lose it.
type QueueItem struct {
	ID        int64           `db:"id"`
	SessionID string          `db:"session_id"`
	Kind      string          `db:"kind"` // "prompt" or "answer"
	Text      string          `db:"text"`
	By        string          `db:"by_name"`
	ByID      int64           `db:"by_id"`
	InputID   string          `db:"input_id"`
	Response  json.RawMessage `db:"response"`
	// Attachments is what a prompt keeps of its attachments (package
	// attach's Kept: ids and metadata, never bytes). It is kept in the
	// response column, which only answers use otherwise.
	Attachments json.RawMessage `db:"attachments"`
	// Parley marks a prompt Parley sends on its own (one that has Claude
	// go on with a cut turn), whoever it is sent for.
	Parley    bool      `db:"parley"`
	CreatedAt time.Time `db:"created_at"`
}

// The kinds of QueueItem.
const (
	QueuePrompt = "prompt"
	QueueAnswer = "answer"
)

const queueColumns = `id, session_id, kind, text, by_name, by_id, input_id,
	CASE WHEN kind = 'answer' THEN response END AS response, CASE WHEN kind = 'prompt' THEN response END AS attachments,
	parley, created_at`

// responseColumn is what the item keeps in session_line.response: an
// answer's response, a prompt's attachments.
func (it QueueItem) responseColumn() any {
	if it.Kind == QueuePrompt {
		return nullJSON(it.Attachments)
	}
	return nullJSON(it.Response)
}

// KeepQueued saves a prompt or an answer that waits in the queue on this
// replica and returns its id.
func (s *Store) KeepQueued(ctx context.Context, it QueueItem) (int64, error) {
	var id int64
	err := s.pool.QueryRow(ctx, `INSERT INTO session_line (session_id, replica_id, kind, text, by_name, by_id, input_id, response, parley)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id`,
		it.SessionID, s.replica, it.Kind, it.Text, it.By, it.ByID, it.InputID, it.responseColumn(), it.Parley).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("keep a %s of session %s in line: %w", it.Kind, it.SessionID, err)
	}
	return id, nil
}

// AppendEventsKeeping appends evs (as AppendEvents) and keeps it in the queue
// in one transaction, and returns the item's id: a log that says a prompt
// will be sent, and the prompt kept, go together or not at all. Released,
// any replica sends it on (SessionsWithOrphanedQueue); else this replica
// serves it, and a crash leaves it to the others.
func (s *Store) AppendEventsKeeping(ctx context.Context, evs []Event, it QueueItem, released bool) (int64, error) {
	replica := s.replica
	if released {
		replica = ""
	}
	var id int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := appendEvents(ctx, tx, evs); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `INSERT INTO session_line (session_id, replica_id, kind, text, by_name, by_id, input_id, response, parley)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id`,
			it.SessionID, replica, it.Kind, it.Text, it.By, it.ByID, it.InputID, it.responseColumn(), it.Parley).Scan(&id); err != nil {
			return fmt.Errorf("keep a %s of session %s in line: %w", it.Kind, it.SessionID, err)
		}
		return nil
	})
	return id, err
}

// LeftQueue removes an item its run has had (or that failed for good), if
// this replica still serves it; ours is false when it does not (a drain
// released it, or another replica claimed it): then it is not removed.
func (s *Store) LeftQueue(ctx context.Context, id int64) (ours bool, err error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM session_line WHERE id = $1 AND replica_id = $2`, id, s.replica)
	if err != nil {
		return false, fmt.Errorf("remove line item %d: %w", id, err)
	}
	return tag.RowsAffected() == 1, nil
}

// ServesQueued says whether this replica still serves the queue item: false
// once another replica claimed it, or it left the queue.
func (s *Store) ServesQueued(ctx context.Context, id int64) (bool, error) {
	var ours bool
	if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM session_line WHERE id = $1 AND replica_id = $2)`,
		id, s.replica).Scan(&ours); err != nil {
		return false, fmt.Errorf("line item %d: %w", id, err)
	}
	return ours, nil
}

// ReleaseQueued gives up items this replica could not send now (a timeout,
// the database away): any replica, this one too, sends them on later
// (SessionsWithOrphanedQueue).
func (s *Store) ReleaseQueued(ctx context.Context, ids ...int64) error {
	if _, err := s.pool.Exec(ctx, `UPDATE session_line SET replica_id = '' WHERE id = ANY($1) AND replica_id = $2`,
		ids, s.replica); err != nil {
		return fmt.Errorf("release line items %v: %w", ids, err)
	}
	return nil
}

// HasOrphanedQueue says whether the session has queue items no live replica serves.
func (s *Store) HasOrphanedQueue(ctx context.Context, sessionID string) (bool, error) {
	var has bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM session_line l WHERE l.session_id = $1 AND `+orphaned+`)`,
		sessionID).Scan(&has)
	if err != nil {
		return false, fmt.Errorf("line of session %s: %w", sessionID, err)
	}
	return has, nil
}

// orphaned matches the queue items no live replica serves: released by a
// replica that shut down (an empty replica_id), or kept by one that is gone.
const orphaned = `(l.replica_id = '' OR NOT EXISTS (
	SELECT 1 FROM replicas r WHERE r.id = l.replica_id AND r.expires_at > now()))`

// SessionsWithOrphanedQueue returns the sessions whose queue items no live
// replica serves, oldest item first.
func (s *Store) SessionsWithOrphanedQueue(ctx context.Context) ([]string, error) {
	rows, _ := s.pool.Query(ctx, `SELECT l.session_id::text FROM session_line l WHERE `+orphaned+`
		GROUP BY l.session_id ORDER BY min(l.id)`)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("sessions with orphaned line items: %w", err)
	}
	return ids, nil
}

// ClaimQueue makes this replica the server of the session's orphaned line
// items and returns them in the order they were given. A prompt whose
// event is in the log (it names the item) was written to Claude's stdin
// before a crash kept its item from leaving: it is removed instead of
// being sent twice.
func (s *Store) ClaimQueue(ctx context.Context, sessionID string) ([]QueueItem, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("claim the line of session %s: %w", sessionID, err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `DELETE FROM session_line l WHERE l.session_id = $1 AND l.kind = 'prompt' AND `+orphaned+`
		AND EXISTS (SELECT 1 FROM events e WHERE e.session_id = l.session_id AND e.type = 'prompt'
			AND e.payload->>'line' = l.id::text)`, sessionID); err != nil {
		return nil, fmt.Errorf("claim the line of session %s: drop delivered prompts: %w", sessionID, err)
	}
	rows, _ := tx.Query(ctx, `UPDATE session_line l SET replica_id = $2 WHERE l.session_id = $1 AND `+orphaned+`
		RETURNING `+queueColumns, sessionID, s.replica)
	items, err := pgx.CollectRows(rows, pgx.RowToStructByName[QueueItem])
	if err != nil {
		return nil, fmt.Errorf("claim the line of session %s: %w", sessionID, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("claim the line of session %s: commit: %w", sessionID, err)
	}
	slices.SortFunc(items, func(a, b QueueItem) int { return cmp.Compare(a.ID, b.ID) })
	return items, nil
}

// QueueOf returns the session's queue items, whoever serves them, in order.
func (s *Store) QueueOf(ctx context.Context, sessionID string) ([]QueueItem, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+queueColumns+` FROM session_line WHERE session_id = $1 ORDER BY id`, sessionID)
	items, err := pgx.CollectRows(rows, pgx.RowToStructByName[QueueItem])
	if err != nil {
		return nil, fmt.Errorf("line of session %s: %w", sessionID, err)
	}
	return items, nil
}
