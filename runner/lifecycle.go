package runner

import (
	"context"

	"parley/askuser"
)

// A run's life once started: its asks from the relay, its stop, its end.

// Stop kills the run's process group and returns once every goroutine of
// the run has ended. It is idempotent.
func (r *Run) Stop() {
	r.cancel()
	<-r.finished
}

// Ask implements askuser.Asker: the relay calls it with a form from the
// run's `parley mcp-askuser`, and it returns when the ask is resolved.
func (r *Run) Ask(ctx context.Context, f askuser.Form) (askuser.Answer, error) {
	reply := make(chan askOpened, 1)
	if err := r.send(ctx, askCmd{f: f, reply: reply}, nil); err != nil {
		return askuser.Answer{}, err
	}
	var opened askOpened
	select {
	case opened = <-reply:
	case <-r.done:
		return askuser.Answer{}, ErrRunEnded
	}
	if opened.err != nil {
		return askuser.Answer{}, opened.err
	}
	select {
	case a := <-opened.answer:
		return a, nil
	case <-ctx.Done():
		// The MCP call was cancelled or the relay connection dropped: the
		// process died, or Claude gave up on the call. An interrupt has
		// already cancelled the ask; anything else leaves it open, to be
		// answered as a new turn.
		r.post(detachCmd{id: opened.id, reason: Withdrawn})
		return askuser.Answer{}, ctx.Err()
	}
}

// finish records the end of the run. It runs on the loop goroutine, with a
// fresh context because the run's own may already be cancelled.
func (r *Run) finish(x exitInfo) {
	// Unbounded: its writes wait out a database outage (persist), and give
	// up only once the run is being stopped.
	ctx := context.Background()
	r.settleDeliveries(ctx, !x.stopped)
	// Open asks outlive the process: they stay on the page, and an answer
	// resumes the session and arrives as the next turn.
	ids := make([]string, 0, len(r.pending))
	for id := range r.pending {
		ids = append(ids, id)
	}
	r.detach(ctx, ids, "the Claude process ended")
	close(r.writes)
	if err := r.persist(ctx, func(ctx context.Context) error { return r.journal.RunEnded(ctx, r.id, x.code, x.reason) }, nil); err != nil {
		r.log.Error("record run end", "err", err)
		r.endLater(err, x.code, x.reason) // recorded once the database is back (dbretry.go)
	}
	status := StatusEnded
	switch {
	case len(r.pending) > 0:
		status = StatusWaiting
	case r.endStatus != "":
		status = r.endStatus
	case x.code != 0 && x.code != -1 && !x.stopped:
		status = StatusError
	}
	r.recordJSON(ctx, TypeRunEnded, map[string]any{"exit_code": x.code, "reason": x.reason, "stderr": r.proc.stderr.String(),
		"status": status, "goes_on": r.parleyGoesOn()})
	r.changeSession(ctx, SessionChange{Status: status})
	r.log.Info("claude ended", "exit_code", x.code, "reason", x.reason)
	r.onEnd()
}
