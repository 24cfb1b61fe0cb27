package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"parley/askuser"
)

// Run is one live claude process of a session and the goroutine that owns it.
type Run struct {
	spec    Spec
	id      int64
	log     *slog.Logger
	journal Journal
	pub     Publisher
	broker  *askuser.Broker
	proc    *process

	askTimeout time.Duration // ask_user questions
	// askMaxTimeout bounds the wait the model may choose per call.
	askMaxTimeout time.Duration
	mcpChecked    bool          // the init event's MCP server status was read
	permTimeout   time.Duration // permissions, plans, AskUserQuestion; 0 = none
	cmds          chan command  // from members and the relay, into the loop
	lines         chan Line     // decoded stdout
	writes        chan []byte   // stdin lines, written by the writer goroutine
	exited        chan exitInfo // the process has ended (after stdout EOF)
	done          chan struct{} // closed when the loop has ended
	cancel        context.CancelFunc
	// closeLater records the run's end once the database is back (dbretry.go).
	closeLater func(runID int64, code int, reason string)
	// goesOn: a drain kept the turn it cut, to go on (parleyGoesOn).
	goesOn bool
	// fenced: another replica took the session over (Fence); the run
	// writes nothing more to the log.
	fenced atomic.Bool
	// revokeModel ends the run's model token (set before the run is
	// live; Fence calls it at once, the run's end again).
	revokeModel func()
	// leaseHeld says whether this replica's lease is surely still held
	// (Supervisor.SetLeaseCheck); nil = always.
	leaseHeld   func() bool
	finished    chan struct{} // closed when every goroutine of the run has ended
	onEnd       func()        // called by the loop once the run has ended
	idleTimeout time.Duration // end the process after this long with nothing to do; 0 = never
	idle        *time.Timer   // owned by the loop
	idleState                 // what the slot queue reads (slots.go)

	// Owned by the loop goroutine.
	seq      int64
	pending  map[string]pendingAsk
	plans    map[string]string // ExitPlanMode tool_use id → the model's plan argument
	turns    int               // turns written and not yet ended by a result
	unread   int               // turns written that the CLI has not echoed as read yet (lines.go)
	initSeen bool              // the CLI printed system/init: its conversation is loaded
	// unconfirmed are the turns written before system/init; resumeFailed
	// says the CLI could not load the conversation to --resume.
	unconfirmed  []sentTurn
	resumeFailed bool
	stopping     bool    // the run is ending: turns and answers go to the next run
	idleGen      int     // numbers idle timers, so a stale one is ignored
	nextReq      int     // numbers Parley's own control requests
	lastCost     float64 // the CLI's running total_cost_usd in this process
	started      bool    // the CLI has created the session: resume next time
	primed       bool    // its process had a prime turn before the run began (prime.go)
	configDir    string
	batching     bool    // record queues events in batch; flush writes them
	batch        []Event // recorded, not yet written
	by           turnBy  // who sent the running turn; read by the model gateway
	authors              // whose turns the process has (authors.go)
	runLimits
	dbWait     // retrying writes the database could not take (dbretry.go)
	deliveries // answers handed to the process, until Claude has them (delivery.go)
	switching  // model and mode switches awaiting the CLI's answer (modeswitch.go)
}

type exitInfo struct {
	code    int
	reason  string
	stopped bool // Parley ended the process (shutdown, idle): not a failure
}

// Done is closed when the run's loop has ended.
func (r *Run) Done() <-chan struct{} { return r.done }

// loop is the run's only goroutine that touches its state, its event log
// and the process's stdin queue. Everything arrives here as a channel receive.
func (r *Run) loop(ctx context.Context) {
	defer close(r.done)
	r.runCtx = ctx
	// What the loop writes to Postgres must not be cut off by the run's own
	// cancellation: an insert cancelled mid-flight may still commit, and the
	// loop's seq would then disagree with the log.
	work := context.WithoutCancel(ctx)
	lines := r.lines
	r.deliverOwed(work) // answers an earlier process never took go first
	// A run started for owed answers that were delivered already (its
	// transcript holds them) may never print a line or get a command: its
	// idle clock starts now, as after any other work.
	r.armIdle()
	if r.worked { // started ahead of a message (ResumeAhead): idle already
		r.markIdle()
		if !r.primed { // a primed process has done more than initialize would (prime.go)
			r.ready(work)
		}
	}
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				lines = nil // stdout is at EOF; the exit comes next
				continue
			}
			if r.handleLines(work, l, lines) {
				lines = nil
			}
			r.stopIfDue(work)
			r.armIdle()
			r.markIdle()
			if l.Type != "tool_progress" {
				r.armStall()
			}
		case c := <-r.cmds:
			if err := c.run(work, r); err != nil {
				r.log.Debug("command failed", "err", err)
			}
			if _, bookkeeping := c.(checkAuthorsCmd); bookkeeping {
				continue // no sign of life: the idle and stall timers run on
			}
			r.armIdle()
			r.markIdle()
			r.armStall()
		case x := <-r.exited:
			r.finish(x)
			return
		case <-ctx.Done():
			// The process group is being killed by exec's Cancel; wait for it
			// so the run's end is recorded.
			select {
			case x := <-r.exited:
				x.reason, x.stopped = "stopped by Parley ("+x.reason+")", true
				r.finish(x)
			case <-time.After(2 * killWait):
				r.finish(exitInfo{code: -1, reason: "stopped by Parley (did not exit after kill)", stopped: true})
			}
			return
		}
	}
}

// record assigns the next seq, persists the event and publishes it, in that
// order: what browsers see is what the database holds.
func (r *Run) record(ctx context.Context, typ string, payload []byte) error {
	e := r.event(typ, payload)
	if r.batching {
		r.batch, r.seq = append(r.batch, e), e.Seq
		return nil
	}
	// An outage is waited out (persist); a refusal is the caller's to handle.
	err := r.persist(ctx, func(ctx context.Context) error { return r.journal.Append(ctx, e) }, r.seqCommitted(e.Seq, e.Seq))
	if err != nil {
		if !unavailable(err) && !errors.Is(err, errFenced) {
			r.resync(ctx)
		}
		return fmt.Errorf("append %s event %d: %w", typ, e.Seq, err)
	}
	r.seq = e.Seq
	r.pub.Publish(e)
	return nil
}

// writeTimeout bounds one attempt at a write of the event log.
const writeTimeout = 15 * time.Second

// recordJSON is record for a value Parley builds itself.
func (r *Run) recordJSON(ctx context.Context, typ string, v any) {
	b, err := json.Marshal(v)
	if err == nil {
		err = r.record(ctx, typ, b)
	}
	if err != nil {
		r.log.Error("record event", "type", typ, "err", err)
	}
}

// notice records a sentence about something Parley did on its own.
func (r *Run) notice(ctx context.Context, level, text string) {
	r.recordJSON(ctx, TypeNotice, map[string]string{"level": level, "text": text})
}

// write queues one line for the process's stdin.
func (r *Run) write(ctx context.Context, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode stdin line: %w", err)
	}
	select {
	case r.writes <- append(b, '\n'):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// writer owns stdin so a slow CLI never blocks the loop. It ends when the
// writes channel is closed or the pipe fails.
func (r *Run) writer(stdin io.WriteCloser) {
	defer stdin.Close()
	for b := range r.writes {
		if _, err := stdin.Write(b); err != nil {
			r.log.Warn("write to claude stdin", "err", err)
			for range r.writes { // drain so the loop never blocks on a dead pipe
			}
			return
		}
	}
}

// reader decodes stdout to EOF, then waits for the process: exec requires
// reading the pipe to its end before Wait. When the run is cancelled it keeps
// draining stdout without handing lines over, so the process can exit.
func (r *Run) reader(ctx context.Context) {
	d := r.proc.decoder()
	for {
		l, err := d.Next()
		if err != nil {
			switch {
			case errors.Is(err, io.EOF):
			case errors.Is(err, os.ErrClosed):
				// exec closed it: the process outlived WaitDelay after its
				// cancel and was killed.
				r.log.Debug("claude stdout closed after the process was killed")
			default:
				r.log.Warn("read claude stdout", "err", err)
			}
			break
		}
		select {
		case r.lines <- l:
		case <-ctx.Done():
		}
	}
	close(r.lines) // every line is handed over before the exit is
	code, reason := exitCode(r.proc.cmd, r.proc.cmd.Wait())
	// Nothing of the run may outlive it: kill any stragglers in its group
	// and its cgroup.
	if err := r.proc.end(); err != nil {
		r.log.Warn("kill what is left of the run", "err", err)
	}
	r.exited <- exitInfo{code: code, reason: reason} // buffered: never blocks
}

// armIdle starts the idle clock when the run has nothing to do (no turn,
// no open ask) and stops it otherwise. It is a deadline, not a poll: the
// timer fires once and the loop decides.
func (r *Run) armIdle() {
	if r.idleTimeout <= 0 {
		return
	}
	if r.idle != nil {
		r.idle.Stop()
	}
	r.idleGen++
	if r.turns > 0 || r.attachedAsks() > 0 {
		return
	}
	gen := r.idleGen
	r.idle = time.AfterFunc(r.idleTimeout, func() { r.post(idleCmd{gen: gen}) })
}

// attachedAsks counts the open asks the process itself waits for; a
// detached ask is answered by a new turn and does not need the process.
func (r *Run) attachedAsks() int {
	n := 0
	for _, pa := range r.pending {
		if pa.attached {
			n++
		}
	}
	return n
}

// resync re-reads the log's last seq after a failed write: a write that
// timed out may still have committed, and the loop's seq must follow the
// log or every later event would collide with it.
func (r *Run) resync(ctx context.Context) {
	if r.fenced.Load() {
		return // the log is another replica's now
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	if n, err := r.journal.LastSeq(ctx, r.spec.SessionID); err == nil {
		r.seq = n
	} else {
		r.log.Error("re-read the session log", "err", err)
	}
}
