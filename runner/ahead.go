package runner

import (
	"context"
	"encoding/json"
	"errors"

	"parley/streamjson"
)

// Resuming a session ahead of its message.
//
// A session whose process has ended (the idle timer, a restart) pays the
// CLI's start, about a second of CPU, on its next message. ResumeAhead
// starts that process when someone is about to write (the page opened, the
// composer got a key), so the message finds it live and costs what a
// follow-up costs. It is a hint, never a claim: it takes only a free slot
// (it never waits in line or pushes a waiting session back), and a process
// nobody uses is idle from its first moment, so the idle timer ends it and
// a waiting session takes its slot at once.

// ResumeAhead starts the session's process with start's options when it
// has none and a slot is free; it does nothing when the process is live or
// starting, every slot is taken, the session's work waits in line, the
// replica is draining or stopping, or it gave way to a merge of the
// session's worktree (ahead_yield.go). Errors are the start's own.
func (s *Supervisor) ResumeAhead(ctx context.Context, sessionID string, start Starter) error {
	s.mu.Lock()
	_, live := s.runs[sessionID]
	_, starting := s.starting[sessionID]
	s.mu.Unlock()
	if live || starting {
		return nil
	}
	_, err := s.ensure(ctx, sessionID, ahead(start), false)
	if errors.Is(err, errNoSlot) || errors.Is(err, errQueued) || errors.Is(err, ErrStartHeld) ||
		errors.Is(err, ErrDraining) || errors.Is(err, errClosed) || errors.Is(err, errGaveWay) {
		return nil
	}
	return err
}

// ahead marks the options start gives as a start ahead of any message.
func ahead(start Starter) Starter {
	return func(ctx context.Context) (Options, error) {
		o, err := start(ctx)
		o.Ahead = true
		return o, err
	}
}

// primeID is the request id of the initialize request a run started ahead
// sends (ready).
const primeID = "parley-ready"

// ready has a process started ahead initialize now rather than on its
// first message (streamjson.NewInitialize), so the message costs less.
func (r *Run) ready(ctx context.Context) {
	if err := r.write(ctx, streamjson.NewInitialize(primeID)); err != nil {
		r.log.Warn("ready a process started ahead", "err", err)
	}
}

// readyAnswer reports whether l is the CLI's answer to ready's request:
// Parley's own bookkeeping, not the session's, so it is not logged.
func readyAnswer(l Line) bool {
	if l.Type != "control_response" {
		return false
	}
	var a streamjson.ControlAnswer
	return json.Unmarshal(l.Raw, &a) == nil && a.Response.RequestID == primeID
}
