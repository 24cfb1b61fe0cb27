package runner

// Turns and interrupts: what turnCmd and interruptCmd do on the loop.

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"parley/askuser"
	"parley/streamjson"
)

// sentTurn is a turn written to a resumed process before it showed that it
// found its conversation; a failed resume sends it again to a fresh one.
type sentTurn struct {
	text   string
	by     Author
	parley bool // Parley's own (QueuedWork.Parley)
	// content follows the text in the turn's message (QueuedWork.Content);
	// attached is what the prompt event records of it.
	content  []json.RawMessage
	attached json.RawMessage
}

// turn records and writes one user turn; a turn that waited in the queue names
// its kept item (item), so it is never sent again after a crash. A turn
// whose author may no longer prompt (it waited while they were removed) is
// not sent: the page says so.
func (r *Run) turn(ctx context.Context, t sentTurn, item int64) error {
	if r.fenced.Load() {
		return errFenced
	}
	if r.mustCheck(t.by, item != 0) && !r.allowed(ctx, t.by) {
		r.notice(ctx, "warn", notSentNotice(t.by))
		return ErrNotAllowed
	}
	r.recordPrompt(ctx, TypePrompt, t, item)
	if r.fenced.Load() {
		// Fenced while its event waited for the lease: the session is
		// another replica's, which sends it (its kept item is released).
		return errFenced
	}
	return r.writeTurn(ctx, t)
}

// recordPrompt logs a turn about to be written to the CLI (typ: TypePrompt,
// or TypeTurnResent for one sent again to a fresh conversation), with its
// author's id (a turn a crash cut off goes on with its author,
// GoOnAfterCrash), the queue item it waited as (0: none), and whether it is
// Parley's own (a turn of Parley's a crash cut off does not go on again).
func (r *Run) recordPrompt(ctx context.Context, typ string, t sentTurn, item int64) {
	p := map[string]any{"text": t.text, "by": t.by.Name, "queued": r.turns > 0}
	if t.by.ID != 0 {
		p["by_id"] = t.by.ID
	}
	if item != 0 {
		p["line"] = item
	}
	if t.parley {
		p["parley"] = true
	}
	if len(t.attached) > 0 {
		p["attachments"] = t.attached
	}
	r.recordJSON(ctx, typ, p)
}

// resendTurn writes again a turn a failed resume lost: it waited, so its
// author is checked first, as for any turn that waited in the queue. It is
// logged again as resent (the page shows it once, where it was sent
// first): the new run's log holds every turn its CLI had.
func (r *Run) resendTurn(ctx context.Context, t sentTurn) error {
	if r.mustCheck(t.by, true) && !r.allowed(ctx, t.by) {
		r.notice(ctx, "warn", notSentNotice(t.by))
		return ErrNotAllowed
	}
	r.recordPrompt(ctx, TypeTurnResent, t, 0)
	return r.writeTurn(ctx, t)
}

// notSentNotice says why a member's message was not sent.
func notSentNotice(by Author) string {
	return fmt.Sprintf("Parley did not send %s's message: %s may no longer send messages in this project.", by.Name, by.Name)
}

// writeTurn writes a user turn to stdin.
func (r *Run) writeTurn(ctx context.Context, t sentTurn) error {
	if !r.initSeen {
		r.unconfirmed = append(r.unconfirmed, t)
	}
	r.by.set(t.by.Name)
	var line any = streamjson.NewUserTurn(t.text)
	if len(t.content) > 0 {
		bt, err := streamjson.NewBlocksTurn(t.text, t.content)
		if err != nil {
			return fmt.Errorf("turn with attachments: %w", err)
		}
		line = bt
	}
	err := r.write(ctx, line)
	if err == nil {
		r.turnWritten(t)
		r.turns++
		r.unread++
		if r.turns == 1 {
			r.changeSession(ctx, SessionChange{Status: r.status()})
		}
	}
	return err
}

// interrupt stops the current turn; by is who stopped it.
func (r *Run) interrupt(ctx context.Context, by string) error {
	r.nextReq++
	r.interrupting()
	id := "parley-interrupt-" + strconv.Itoa(r.nextReq)
	r.recordJSON(ctx, TypeInterrupt, map[string]any{"by": by, "request_id": id})
	err := r.write(ctx, streamjson.NewInterrupt(id))
	// The CLI cancels a blocked MCP call on interrupt; close the asks here
	// too so every page shows it at once, whatever the MCP server does.
	for _, pa := range r.pending {
		if rerr := r.resolve(ctx, pa, askuser.StatusCancelled, Response{Reason: "the run was stopped"}); rerr != nil {
			r.log.Warn("cancel ask on interrupt", "input_id", pa.p.InputID, "err", rerr)
		}
	}
	return err
}

// callTimeout is how long an ask_user call waits: the model's "timeout"
// kept within [askuser.MinTimeoutSeconds, the project's maximum], else the
// project's ask timeout. The MCP server refuses a timeout out of bounds;
// this holds the bound for any other client of the relay.
func (r *Run) callTimeout(f askuser.Form) time.Duration {
	if f.TimeoutSeconds <= 0 {
		return r.askTimeout
	}
	d := time.Duration(f.TimeoutSeconds) * time.Second
	return min(max(d, askuser.MinTimeoutSeconds*time.Second), max(r.askTimeout, r.askMaxTimeout))
}
