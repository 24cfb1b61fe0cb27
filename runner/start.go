package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"parley/askuser"

	"github.com/google/uuid"
)

// A run's start: its files, its process and its goroutines.

// start launches the process and the run's goroutines. The session is
// marked starting, so no other run of it starts meanwhile.
func (s *Supervisor) start(o Options) (*Run, error) {
	defer s.dropUnadopted(o.Warm) // a process started ahead that no run took ends (warm_adopt.go)
	s.window.setProject(o.SessionID, o.ProjectID)
	if err := s.window.check(o.SessionID); err != nil { // stopped while its options were read
		return nil, err
	}
	// The log's last seq is read here, after the previous run of the
	// session has left the map (it does so only once its last event is
	// written), so the new run continues the log exactly.
	goOn := s.reconcile(s.ctx, o)
	defer func() {
		if goOn != nil { // the run did not start: the next pass over the queue sends it
			s.releaseQueued(goOn)
		}
	}()
	last, err := s.lastSeq(o.SessionID)
	if err != nil {
		return nil, err
	}
	if err := ensureRuntimeDir(s.runtimeDir); err != nil {
		return nil, err
	}
	if o.Warm != nil { // a process started ahead: used once, else the start is cold
		r, err := s.adopt(o, last)
		if err == nil {
			if goOn != nil {
				s.goOnFirst(r, goOn)
				goOn = nil
			}
			return r, nil
		}
		if !errors.Is(err, errWarmUsed) { // stopped or fenced in its window
			return nil, err
		}
		// Not adopted (it died, or its prime failed): it may have written
		// its conversation under the session's CLI id, and the CLI refuses
		// a --session-id in use, so the cold start gets an id of its own.
		if o, err = s.freshConversation(o); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(s.ctx)
	r := s.newRun(o, last, cancel)
	cleanup, err := s.prepare(r, o)
	if err != nil {
		cancel()
		return nil, err
	}
	p, err := s.cfg.start(ctx, r.spec)
	if err != nil {
		cleanup()
		cancel()
		return nil, err
	}
	s.startPoint(o.SessionID, StartSpawned)
	if o.Resume {
		if err := s.unprime(r, p); err != nil { // unprime.go
			p.kill()
			cleanup()
			cancel()
			return nil, err
		}
	}
	if o.Ahead {
		if err := s.primeAhead(ctx, r, p); err != nil {
			cleanup()
			cancel()
			return nil, err
		}
	}
	if err := s.readyToRecord(o.SessionID); err != nil { // supervisor_window.go
		p.kill()
		cleanup()
		cancel()
		return nil, err
	}
	s.started(ctx, r, p, o)
	s.startPoint(o.SessionID, StartRecorded)
	r.onEnd = s.onRunEnd(r, o, cleanup)
	if err := s.launch(ctx, cancel, r, p); err != nil {
		s.endUnlaunched(r, p.kill, err)
		cleanup()
		cancel()
		return nil, err
	}
	if goOn != nil {
		s.goOnFirst(r, goOn)
		goOn = nil
	}
	return r, nil
}

// lastSeq reads the session log's last seq, which the new run continues.
func (s *Supervisor) lastSeq(sessionID string) (int64, error) {
	ctx, cancel := context.WithTimeout(s.ctx, writeTimeout)
	defer cancel()
	last, err := s.journal.LastSeq(ctx, sessionID)
	if err != nil {
		return 0, fmt.Errorf("read the session log: %w", err)
	}
	return last, nil
}

// newRun is the run of o, not yet started, whose log goes on after last;
// cancel ends it.
func (s *Supervisor) newRun(o Options, last int64, cancel context.CancelFunc) *Run {
	r := &Run{seq: last, spec: o.Spec, journal: s.journal, pub: s.pub, broker: s.broker, leaseHeld: s.leaseHeld,
		askTimeout: o.AskTimeout, askMaxTimeout: o.AskMaxTimeout, permTimeout: o.PermissionTimeout, idleTimeout: o.IdleTimeout, started: o.Resume,
		cmds: make(chan command), lines: make(chan Line, lineBuffer), writes: make(chan []byte, 64),
		exited: make(chan exitInfo, 1), done: make(chan struct{}), finished: make(chan struct{}),
		cancel: cancel, pending: map[string]pendingAsk{}, plans: map[string]string{}}
	r.mayPrompt = o.MayPrompt
	r.worked = o.Ahead
	r.runLimits = runLimits{stallTimeout: o.StallTimeout, stallGrace: o.StallGrace, budgetCheck: o.BudgetCheck,
		outcome: map[bool]string{true: StatusEnded, false: "idle"}[o.Resume]}
	r.log = s.log.With("session_id", o.SessionID)
	r.othersWaiting = func() bool { return s.slots.queued() > 0 }
	r.closeLater = s.closeRunLater
	r.stateChanged = s.runStateChanged // a drain, and the CPU line (cpu.go)
	return r
}

// prepare readies what the run's process needs: its ask_user config,
// registered with the broker, its model admission and its instructions
// file. cleanup undoes all of it; on an error it has been undone.
func (s *Supervisor) prepare(r *Run, o Options) (cleanup func(), err error) {
	unregister, err := s.registerAsks(r, o)
	if err != nil {
		return nil, err
	}
	r.revokeModel = s.admitModel(r, o)
	cleanup = func() {
		r.revokeModel()
		if unregister != nil {
			unregister()
		}
		for _, path := range []string{r.spec.AskConfigPath, r.spec.MCPConfigPath, r.spec.InstructionsPath} {
			if path == "" {
				continue
			}
			if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
				r.log.Warn("remove ask_user config", "err", err)
			}
		}
	}
	if r.spec.InstructionsPath, err = writeInstructions(s.runtimeDir, r.spec.Instructions); err != nil {
		cleanup()
		return nil, err
	}
	return cleanup, nil
}

// registerAsks writes the run's ask_user config, when it has the relay,
// and registers the run with the broker under its token; unregister is
// nil when there is no relay.
func (s *Supervisor) registerAsks(r *Run, o Options) (unregister func(), err error) {
	if o.RelayURL == "" {
		return nil, nil
	}
	token := askuser.NewToken()
	var path string
	if o.AskOverHTTP {
		path, err = askHTTPConfig(s.runtimeDir, AskHTTPURL(o.RelayURL), token)
		r.spec.MCPConfigPath = path
	} else {
		path, err = askuser.WriteConfig(s.runtimeDir, askuser.Config{URL: o.RelayURL, Token: token,
			TimeoutSeconds: int(o.AskTimeout / time.Second), MaxTimeoutSeconds: int(o.AskMaxTimeout / time.Second)})
		r.spec.AskConfigPath = path
	}
	if err != nil {
		return nil, fmt.Errorf("write ask_user config: %w", err)
	}
	return s.broker.RegisterWithConfig(token, r, askuser.Config{
		TimeoutSeconds: int(o.AskTimeout / time.Second), MaxTimeoutSeconds: int(o.AskMaxTimeout / time.Second)}), nil
}

// started records the run's process p: its run row, its log line, its
// run_started event and the notices o brings.
func (s *Supervisor) started(ctx context.Context, r *Run, p *process, o Options) {
	r.proc = p
	var err error
	if r.id, err = s.journal.RunStarted(ctx, o.SessionID, p.cmd.Process.Pid); err != nil {
		r.log.Error("record run start", "err", err)
	}
	r.log = r.log.With("run_id", r.id, "pid", p.cmd.Process.Pid)
	r.log.Info("claude started", "resume", o.Resume)
	r.recordJSON(ctx, TypeRunStarted, map[string]any{"pid": p.cmd.Process.Pid, "run_id": r.id, "resume": o.Resume})
	for _, n := range o.Notices {
		r.notice(ctx, "warn", n)
	}
}

// onRunEnd is what follows the end of r (its onEnd): its files removed,
// its slot given back, and the session started again when the run left
// turns to resend or answers to deliver.
func (s *Supervisor) onRunEnd(r *Run, o Options, cleanup func()) func() {
	return func() {
		cleanup()
		s.mu.Lock()
		if s.runs[o.SessionID] == r {
			delete(s.runs, o.SessionID)
		}
		s.mu.Unlock()
		s.releaseSlot()
		if s.runEnded != nil {
			s.runEnded()
		}
		if r.fenced.Load() {
			return // the session is another replica's now: nothing starts it here
		}
		if r.resumeFailed && len(r.unconfirmed) > 0 {
			s.wg.Add(1)
			go func() { defer s.wg.Done(); s.startFresh(o, r.unconfirmed) }()
		}
		if r.OwesAnswers() {
			s.resumeToDeliver(o)
		}
	}
}

// launch puts r in the map of live runs and starts its goroutines: the
// writer to p's stdin, the reader of its stdout and the loop. It does
// neither, and returns the error, when r's start was stopped or fenced in
// its window; it waits while the replica's lease is not surely held
// (supervisor_window.go).
func (s *Supervisor) launch(ctx context.Context, cancel context.CancelFunc, r *Run, p *process) error {
	for {
		if err := s.awaitLease(r.spec.SessionID); err != nil {
			return err
		}
		s.mu.Lock()
		if s.leaseHeld == nil || s.leaseHeld() {
			break // with s.mu held
		}
		s.mu.Unlock()
	}
	if err := s.window.launching(r); err != nil {
		s.mu.Unlock()
		return err
	}
	// Shutdown cancels what is in the map; a run that lands there after
	// it began is cancelled here.
	s.runs[r.spec.SessionID] = r
	s.wg.Add(1)
	closed := s.closed
	s.mu.Unlock()
	if closed {
		cancel()
	}
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); r.writer(p.stdin) }()
	go func() { defer wg.Done(); r.reader(ctx) }()
	go func() { defer wg.Done(); r.loop(ctx) }()
	go func() { defer s.wg.Done(); wg.Wait(); cancel(); close(r.finished) }()
	return nil
}

// freshConversation gives o's session a new CLI session id, recorded,
// for a new conversation.
func (s *Supervisor) freshConversation(o Options) (Options, error) {
	ctx, cancel := context.WithTimeout(s.ctx, writeTimeout)
	defer cancel()
	o.ClaudeSessionID, o.Resume = uuid.NewString(), false
	if err := s.journal.SessionChanged(ctx, o.SessionID, SessionChange{NewClaudeSessionID: o.ClaudeSessionID}); err != nil {
		return o, fmt.Errorf("a new conversation in place of the process started ahead: %w", err)
	}
	return o, nil
}

// startFresh replaces a conversation the CLI could not resume with a new
// one and sends it the turns the failed resume lost.
func (s *Supervisor) startFresh(o Options, turns []sentTurn) {
	ctx, cancel := context.WithTimeout(s.ctx, time.Minute)
	defer cancel()
	log := s.log.With("session_id", o.SessionID)
	o.ClaudeSessionID, o.Resume = uuid.NewString(), false
	if err := s.journal.SessionChanged(ctx, o.SessionID, SessionChange{NewClaudeSessionID: o.ClaudeSessionID}); err != nil {
		log.Error("start a fresh conversation", "err", err)
		return
	}
	err := s.withRun(ctx, o.SessionID, With(o), job{do: func(ctx context.Context, r *Run, _ int64) error {
		r.post(noticeCmd{level: "warn", text: "Claude could not resume the earlier conversation (its transcript was never saved), " +
			"so Parley started a new one and sent your last message to it again."})
		for _, t := range turns {
			reply := make(chan error, 1)
			err := r.send(ctx, turnCmd{text: t.text, by: t.by, parley: t.parley, content: t.content, attached: t.attached, resend: true, reply: reply}, reply)
			if err != nil && !errors.Is(err, ErrNotAllowed) { // one not allowed: the page says so
				return fmt.Errorf("resend turn to the fresh conversation: %w", err)
			}
		}
		return nil
	}}, false)
	if err != nil {
		log.Error("start a fresh conversation", "err", err)
	}
}

// Options are the per-session settings of a new run.
type Options struct {
	Spec
	RelayURL string // loopback URL of the ask relay; "" = no ask_user tool
	// AskOverHTTP serves ask_user at the relay's streamable HTTP endpoint
	// instead of a `parley mcp-askuser` child per run.
	AskOverHTTP bool
	AskTimeout  time.Duration // how long an ask_user question waits
	// AskMaxTimeout is the longest wait the model may choose for one
	// ask_user call ("timeout"); 0 = AskTimeout.
	AskMaxTimeout time.Duration
	// PermissionTimeout is how long permission, plan and AskUserQuestion
	// asks wait before they are denied; 0 = no deadline.
	PermissionTimeout time.Duration
	// IdleTimeout ends the process after this long without a turn or an
	// open ask; the next message resumes the session. 0 = never.
	IdleTimeout time.Duration
	// StallTimeout interrupts a turn that prints nothing for this long
	// (never while an ask is open); 0 = no watchdog. StallGrace is how long
	// the interrupt gets before the process is killed (0 = 10 s).
	StallTimeout, StallGrace time.Duration
	// BudgetCheck is called after every turn: it returns the sentence that
	// says which spending limit is reached, or "" when none is. nil = no
	// limits of Parley's own (the CLI's --max-budget-usd may still apply).
	BudgetCheck func(context.Context) string
	// MayPrompt says whether the user may send turns in the session's
	// project now: a turn that waited (in the queue for a slot) is not sent if
	// its author may not, and a member who loses the right has their
	// running turn stopped (CheckAuthors). nil = anyone may.
	MayPrompt func(ctx context.Context, userID int64) (bool, error)
	// ModelURL is the model gateway's base URL; with Config.Gateway set, the
	// run's model traffic goes there with a token of its own.
	ModelURL string
	// Notices are recorded in the session when the run starts (workspace
	// files Parley refused to read, say).
	Notices []string
	// Warm, if set, is a process started ahead with these options (its
	// Spec's): the run adopts it instead of starting one (warm.go).
	Warm *Warm
	// Ahead is a start before any message (ResumeAhead): the run is idle
	// from its first moment, so the idle timer ends it when nobody writes
	// and it yields its slot at once to a session waiting in line.
	Ahead bool
}

// Starter gives the options to start a session's process with. The
// supervisor calls it only when the session has no live process, so a
// message to a running session costs no project lookup and no workspace
// writes.
type Starter func(ctx context.Context) (Options, error)

// With is a Starter for options already at hand.
func With(o Options) Starter {
	return func(context.Context) (Options, error) { return o, nil }
}
