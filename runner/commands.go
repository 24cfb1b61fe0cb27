package runner

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"parley/askuser"
	"parley/streamjson"
)

// The loop's vocabulary: every command another goroutine hands to Run.loop
// (run.go), each with what it does there. The work they call lives beside
// its subject (turns.go, asks.go, drain.go, watchdog.go…); what reaches the
// loop, and how, is read here.
//
//	turnCmd, interruptCmd, answerCmd  a member's turn, stop and answer
//	askCmd, resolveCmd, detachCmd     an ask_user call opened, closed, let go
//	expireCmd                         a detached ask expired (expire.go)
//	noticeCmd                         a sentence about what Parley did
//	idleCmd, reapCmd                  an idle process ended (run.go, idle.go)
//	stallCmd, stallKillCmd            a silent turn interrupted, then killed
//	checkAuthorsCmd                   authors' rights checked again
//	drainCmd                          the run's part of a drain (drain.go)

// command is something the loop does on behalf of another goroutine; run
// executes it inside the loop and reports the result on reply.
type command interface {
	run(ctx context.Context, r *Run) error
}

// send hands c to the loop and waits for its result.
func (r *Run) send(ctx context.Context, c command, reply chan error) error {
	select {
	case r.cmds <- c:
	case <-r.done:
		return ErrRunEnded
	case <-ctx.Done():
		return ctx.Err()
	}
	if reply == nil {
		return nil
	}
	select {
	case err := <-reply:
		return err
	case <-r.done:
		return ErrRunEnded
	case <-ctx.Done():
		return ctx.Err()
	}
}

// post hands a command to the loop without waiting for its result.
func (r *Run) post(c command) {
	select {
	case r.cmds <- c:
	case <-r.done:
	}
}

// turnCmd writes a user turn. A turn sent while another runs is queued by
// the CLI and runs after it.
type turnCmd struct {
	text   string
	by     Author
	resend bool  // a turn a failed resume lost, logged again as resent
	item   int64 // its kept queue item, named in the prompt event (0 = none)
	parley bool  // Parley's own (QueuedWork.Parley)
	reply  chan error
	// content and attached are QueuedWork's Content and Attached.
	content  []json.RawMessage
	attached json.RawMessage
}

func (c turnCmd) run(ctx context.Context, r *Run) error {
	if r.stopping {
		c.reply <- ErrRunEnded
		return ErrRunEnded
	}
	r.worked = true
	var err error
	if c.resend {
		err = r.resendTurn(ctx, sentTurn{text: c.text, by: c.by, parley: c.parley, content: c.content, attached: c.attached})
	} else {
		err = r.turn(ctx, sentTurn{text: c.text, by: c.by, parley: c.parley, content: c.content, attached: c.attached}, c.item)
	}
	c.reply <- err
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

// idleCmd ends a process that has had nothing to do for idleTimeout; the
// session's next message resumes it with --resume.
type idleCmd struct{ gen int }

func (c idleCmd) run(ctx context.Context, r *Run) error {
	if c.gen != r.idleGen || r.turns > 0 || r.attachedAsks() > 0 {
		return nil // work arrived after the timer fired
	}
	r.stopping = true
	r.log.Info("ending idle claude process", "idle_for", r.idleTimeout)
	r.cancel()
	return nil
}

// noticeCmd records a sentence about what Parley did on its own.
type noticeCmd struct{ level, text string }

func (c noticeCmd) run(ctx context.Context, r *Run) error {
	r.notice(ctx, c.level, c.text)
	return nil
}

// reapCmd ends an idle run for a session waiting in the queue; a run that got
// work meanwhile keeps going.
type reapCmd struct{}

func (reapCmd) run(ctx context.Context, r *Run) error {
	r.reaping.Store(false)
	if r.turns > 0 || r.attachedAsks() > 0 || r.stopping {
		return nil
	}
	r.yieldSlot("a session is waiting for a free slot")
	return nil
}

// stallCmd interrupts a turn that has been silent for stallTimeout.
type stallCmd struct{ gen int }

func (c stallCmd) run(ctx context.Context, r *Run) error {
	if c.gen != r.stallGen || r.turns == 0 || len(r.pending) > 0 || r.stallFired || r.stopping {
		return nil // output, an ask or the turn's end came after the timer fired
	}
	r.stallFired = true
	r.log.Warn("turn stalled: interrupting", "silent_for", r.stallTimeout)
	// "stops_turn": a crash while the interrupt ends the turn does not
	// have it go on (GoOnAfterCrash).
	r.recordJSON(ctx, TypeNotice, map[string]any{"level": "warn", "stops_turn": true,
		"text": "Claude printed nothing for " + words(max(r.stallTimeout, time.Second)) +
			", so Parley interrupted the turn. The session goes on: send a message to continue."})
	r.nextReq++
	r.interrupting()
	err := r.write(ctx, streamjson.NewInterrupt("parley-watchdog-"+strconv.Itoa(r.nextReq)))
	epoch, grace := r.stallEpoch, r.stallGrace
	if grace <= 0 {
		grace = DefaultStallGrace
	}
	r.stallKill = time.AfterFunc(grace, func() { r.post(stallKillCmd{epoch: epoch}) })
	return err
}

// stallKillCmd ends the process of a stalled turn the interrupt did not end.
type stallKillCmd struct{ epoch int }

func (c stallKillCmd) run(ctx context.Context, r *Run) error {
	if c.epoch != r.stallEpoch || !r.stallFired || r.stopping {
		return nil // the turn ended after all
	}
	grace := r.stallGrace
	if grace <= 0 {
		grace = DefaultStallGrace
	}
	r.log.Warn("stalled turn did not end after the interrupt: killing claude", "grace", grace)
	r.notice(ctx, "warn", "The interrupt did not end the turn within "+words(grace)+
		", so Parley ended the Claude process. The session is kept: the next message resumes it.")
	r.endStatus = StatusInterrupted
	r.stopping = true
	r.cancel()
	return nil
}

// checkAuthorsCmd has the run ask again whether the authors of its turns
// may still prompt (a member was removed or their role changed).
type checkAuthorsCmd struct{}

func (checkAuthorsCmd) run(ctx context.Context, r *Run) error {
	r.unsure = false
	for _, a := range r.ran {
		r.allowed(ctx, a)
	}
	if r.unsure { // made again soon, until it can be made
		time.AfterFunc(checkRetry, func() { r.post(checkAuthorsCmd{}) })
	}
	if len(r.lines) > 0 {
		r.stopDue = true
		return nil
	}
	r.stopBarredTurn(ctx)
	r.endIfDue(ctx)
	return nil
}

// drainReply is what a run was doing when a drain ended it, and the
// prompt that goes on with what the drain cut off, if any (goOn).
type drainReply struct {
	activity int32
	goOn     *QueuedWork
}

// drainCmd is endForDrain's part on the loop.
type drainCmd struct {
	reply chan drainReply
	keep  func(*QueuedWork)
}

func (c drainCmd) run(ctx context.Context, r *Run) error {
	r.handleBuffered(ctx) // a result already read ends its turn first
	a := drainReply{activity: r.currentActivity()}
	var running *turnAuthor
	if a.activity != activityQuiet {
		var unread []turnAuthor
		running, unread = r.cutOff(a.activity)
		if w, ok := goOn(running, unread); ok {
			if c.keep != nil {
				c.keep(&w)
			}
			a.goOn = &w
			r.goesOn = true // the run-end notice says Parley carries on (goeson.go)
		}
	}
	r.stopping = true
	c.reply <- a
	r.cancel()
	// Written before the loop ends, so before the session is handed over;
	// after the cancel, so an outage does not hold the drain up.
	if running != nil {
		r.notice(ctx, "warn", cutNotice)
	}
	return nil
}

// expireCmd expires a detached ask of a live run.
type expireCmd struct {
	id, reason string
	reply      chan error
}

func (c expireCmd) run(ctx context.Context, r *Run) error {
	pa, ok := r.pending[c.id]
	if ok && pa.attached {
		c.reply <- ErrNotPending
		return nil
	}
	if !ok {
		var err error
		if pa, err = r.loadDetached(ctx, c.id); err != nil {
			c.reply <- err
			return nil
		}
	}
	err := r.resolve(ctx, pa, askuser.StatusExpired, Response{Reason: c.reason})
	if errors.Is(err, ErrNotPending) || errors.Is(err, ErrNotFound) {
		c.reply <- err
		return nil
	}
	c.reply <- err
	return err
}
