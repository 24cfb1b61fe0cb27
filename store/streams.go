package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// OpenStream is the top-level message whose stream is open at a seq of a
// session's log: one that started (a message_start stream event) and has
// not stopped (message_stop), nor had its turn or run end since.
type OpenStream struct {
	MessageID string // "" when no stream is open
	HasText   bool   // text streamed into it
	Done      bool   // an assistant event completed its text
}

// topLevel is true of an event a subagent did not print.
const topLevel = `jsonb_typeof(payload -> 'parent_tool_use_id') IS DISTINCT FROM 'string'`

// StreamOpenAt returns the stream open at seq `at` of the session's log: a
// page that has the log up to `at` shows that message's block, and the
// text deltas after `at` belong to it until the next message_start.
func (s *Store) StreamOpenAt(ctx context.Context, sessionID string, at int64) (OpenStream, error) {
	var start int64
	var id string
	err := s.pool.QueryRow(ctx, `SELECT seq, payload -> 'event' -> 'message' ->> 'id' FROM events
		WHERE session_id = $1 AND seq <= $2 AND type = 'stream_event'
			AND payload -> 'event' ->> 'type' = 'message_start' AND `+topLevel+`
		ORDER BY seq DESC LIMIT 1`, sessionID, at).Scan(&start, &id)
	if errors.Is(err, pgx.ErrNoRows) {
		return OpenStream{}, nil
	} else if err != nil {
		return OpenStream{}, fmt.Errorf("stream open at %d of session %s: %w", at, sessionID, err)
	}
	var ended bool
	o := OpenStream{MessageID: id}
	err = s.pool.QueryRow(ctx, `SELECT
		coalesce(bool_or(type IN ('result', 'run_ended')
			OR (type = 'stream_event' AND payload -> 'event' ->> 'type' = 'message_stop' AND `+topLevel+`)), false),
		coalesce(bool_or(type = 'stream_event' AND payload -> 'event' -> 'delta' ->> 'type' = 'text_delta' AND `+topLevel+`), false),
		coalesce(bool_or(type = 'assistant' AND payload -> 'message' ->> 'id' = $4 AND `+topLevel+`
			AND jsonb_path_exists(payload, '$.message.content[*] ? (@.type == "text")')), false)
		FROM events WHERE session_id = $1 AND seq > $2 AND seq <= $3`, sessionID, start, at, id).Scan(&ended, &o.HasText, &o.Done)
	if err != nil {
		return OpenStream{}, fmt.Errorf("stream open at %d of session %s: %w", at, sessionID, err)
	}
	if ended || id == "" {
		return OpenStream{}, nil
	}
	return o, nil
}
