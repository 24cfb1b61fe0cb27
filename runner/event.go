// Package runner spawns and supervises the `claude` CLI: one live process per
// active chat session, its stdout decoded line by line, and one goroutine per
// run that owns a select over everything that can happen to the run.
package runner

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Event types Parley adds to a session's log beside the CLI's own stdout
// events (system, assistant, user, stream_event, result, control_request,
// control_response, tool_progress and whatever a newer CLI prints).
const (
	TypePrompt         = "prompt"          // a user turn written to stdin
	TypeTurnResent     = "turn_resent"     // a turn a failed --resume lost, written again to a fresh conversation
	TypeInterrupt      = "interrupt"       // a stop requested by a member
	TypeRunStarted     = "run_started"     // a claude process started
	TypeRunEnded       = "run_ended"       // a claude process exited
	TypeInputRequested = "input_requested" // an ask opened (question, permission, plan)
	TypeInputResolved  = "input_resolved"  // an ask answered, timed out, cancelled or expired
	TypeInputDetached  = "input_detached"  // asks that outlived their waiter; an answer becomes a new turn
	TypeMalformed      = "malformed"       // a stdout line that is not JSON
	TypeNotice         = "notice"          // something Parley did on its own, said in a sentence
)

// Event is one entry of a session's event log. Seq is assigned by the run's
// loop, the log's single writer.
type Event struct {
	SessionID string
	ProjectID int64 // not stored: lets the publisher reach the project's inbox
	Seq       int64
	Type      string
	Payload   json.RawMessage
	CreatedAt time.Time
}

// Input is one pending ask as the run opens it.
type Input struct {
	ID        string
	SessionID string
	RunID     int64
	Kind      string // question | permission | plan
	Status    string // as loaded: pending, answered, denied, …
	Payload   json.RawMessage
	Deadline  *time.Time
}

// Journal persists a session's event log, its asks and its runs.
type Journal interface {
	// LastSeq is the session log's last seq (0 when empty).
	LastSeq(ctx context.Context, sessionID string) (int64, error)
	Append(ctx context.Context, e Event) error
	OpenInput(ctx context.Context, in Input, e Event) error
	// ResolveInput moves a pending input to status exactly once; a second
	// call returns ErrNotPending.
	ResolveInput(ctx context.Context, id, status string, answer json.RawMessage, by string, e Event) error
	// LoadInput returns an input by id, or ErrNotFound.
	LoadInput(ctx context.Context, id string) (Input, error)
	RunStarted(ctx context.Context, sessionID string, pid int) (int64, error)
	RunEnded(ctx context.Context, runID int64, exitCode int, reason string) error
	SessionChanged(ctx context.Context, sessionID string, c SessionChange) error
}

// SessionChange is what a run tells the store about its session.
type SessionChange struct {
	Status        string  // "" = unchanged
	ClaudeStarted bool    // the CLI now knows the session id: resume next time
	CostUSD       float64 // added to the total
	Turns         int     // added to the total
	// NewClaudeSessionID replaces the CLI's session id (and clears
	// ClaudeStarted) when a conversation could not be resumed.
	NewClaudeSessionID string
}

// Publisher hands persisted events to whoever shows them. It must not block.
type Publisher interface {
	Publish(e Event)
}

// Errors callers of a run can tell apart.
var (
	ErrNotPending = errors.New("this ask was already answered or is closed")
	ErrNotFound   = errors.New("no such ask in this session")
	ErrRunEnded   = errors.New("the Claude process of this session has ended")
)
