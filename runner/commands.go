package runner

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"parley/askuser"
	"parley/streamjson"
)

// turnCmd writes a user turn. A turn sent while another runs is queued by
// the CLI and runs after it.
type turnCmd struct {
	text   string
	by     Author
	resend bool  // a turn a failed resume lost, logged again as resent
	line   int64 // its kept line item, named in the prompt event (0 = none)
	parley bool  // Parley's own (QueuedWork.Parley)
	reply  chan error
}

func (c turnCmd) run(ctx context.Context, r *Run) error {
	if r.stopping {
		c.reply <- ErrRunEnded
		return ErrRunEnded
	}
	r.worked = true
	var err error
	if c.resend {
		err = r.resendTurn(ctx, sentTurn{text: c.text, by: c.by, parley: c.parley})
	} else {
		err = r.turn(ctx, sentTurn{text: c.text, by: c.by, parley: c.parley}, c.line)
	}
	c.reply <- err
	return err
}

// sentTurn is a turn written to a resumed process before it showed that it
// found its conversation; a failed resume sends it again to a fresh one.
type sentTurn struct {
	text   string
	by     Author
	parley bool // Parley's own (QueuedWork.Parley)
}

// turn records and writes one user turn; a turn that waited in line names
// its kept item (line), so it is never sent again after a crash. A turn
// whose author may no longer prompt (it waited while they were removed) is
// not sent: the page says so.
func (r *Run) turn(ctx context.Context, t sentTurn, line int64) error {
	if r.fenced.Load() {
		return errFenced
	}
	if r.mustCheck(t.by, line != 0) && !r.allowed(ctx, t.by) {
		r.notice(ctx, "warn", notSentNotice(t.by))
		return ErrNotAllowed
	}
	r.recordPrompt(ctx, TypePrompt, t, line)
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
// GoOnAfterCrash), the line item it waited as (0: none), and whether it is
// Parley's own (a turn of Parley's a crash cut off does not go on again).
func (r *Run) recordPrompt(ctx context.Context, typ string, t sentTurn, line int64) {
	p := map[string]any{"text": t.text, "by": t.by.Name, "queued": r.turns > 0}
	if t.by.ID != 0 {
		p["by_id"] = t.by.ID
	}
	if line != 0 {
		p["line"] = line
	}
	if t.parley {
		p["parley"] = true
	}
	r.recordJSON(ctx, typ, p)
}

// resendTurn writes again a turn a failed resume lost: it waited, so its
// author is checked first, as for any turn that waited in line. It is
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
	err := r.write(ctx, streamjson.NewUserTurn(t.text))
	if err == nil {
		r.turnWritten(t)
		r.turns++
		if r.turns == 1 {
			r.changeSession(ctx, SessionChange{Status: r.status()})
		}
	}
	return err
}

// interruptCmd stops the current turn with the interrupt control request;
// the process survives and takes the next turn.
type interruptCmd struct {
	by    string
	reply chan error
}

func (c interruptCmd) run(ctx context.Context, r *Run) error {
	err := r.interrupt(ctx, c.by)
	c.reply <- err
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

// askCmd opens an ask_user form relayed by `parley mcp-askuser`.
type askCmd struct {
	f     askuser.Form
	reply chan askOpened
}

type askOpened struct {
	id     string
	answer <-chan askuser.Answer
	err    error
}

func (c askCmd) run(ctx context.Context, r *Run) error {
	if a, ok := r.savedAnswer(c.f.ToolUseID); ok {
		// The same call asks again (its relay connection broke after the
		// answer was saved): the process still waits, so answer it now.
		ch := make(chan askuser.Answer, 1)
		ch <- a
		c.reply <- askOpened{answer: ch}
		return nil
	}
	f := c.f
	f.ToolUseID = "" // kept in the payload, not in the form the card shows
	p := AskPayload{Kind: KindQuestion, Source: SourceAskUser, Form: &f, ToolUseID: c.f.ToolUseID}
	timeout := r.callTimeout(f)
	id, err := r.openAsk(ctx, p, timeout)
	if err != nil {
		c.reply <- askOpened{err: err}
		return err
	}
	ch := r.broker.Open(id, timeout, func(id string) {
		r.post(resolveCmd{id: id, status: askuser.StatusTimedOut})
	})
	c.reply <- askOpened{id: id, answer: ch}
	return nil
}

// answerCmd is a member's response to a pending ask.
type answerCmd struct {
	id    string
	resp  Response
	reply chan error
}

func (c answerCmd) run(ctx context.Context, r *Run) error {
	if r.stopping {
		c.reply <- ErrRunEnded
		return ErrRunEnded
	}
	r.worked = true
	err := r.answer(ctx, c.id, c.resp)
	c.reply <- err
	return err
}

// resolveCmd closes an ask on Parley's own account (timeout, withdrawal).
type resolveCmd struct {
	id     string
	status askuser.Status
	reason string
}

func (c resolveCmd) run(ctx context.Context, r *Run) error {
	pa, ok := r.pending[c.id]
	if !ok || !pa.attached {
		return nil // answered or detached meanwhile
	}
	return r.resolve(ctx, pa, c.status, Response{Reason: c.reason})
}

// Withdrawn is the reason of an input_detached event for an ask Claude
// stopped waiting for while its process lives: its turn goes on without it.
const Withdrawn = "Claude stopped waiting for the answer"

// detachCmd says the waiter of an ask has gone (see Run.detach).
type detachCmd struct {
	id, reason string
}

func (c detachCmd) run(ctx context.Context, r *Run) error {
	r.detach(ctx, []string{c.id}, c.reason)
	r.changeSession(ctx, SessionChange{Status: r.status()})
	return nil
}

// post hands a command to the loop without waiting for its result.
func (r *Run) post(c command) {
	select {
	case r.cmds <- c:
	case <-r.done:
	}
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
