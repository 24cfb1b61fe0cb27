package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"parley/askuser"

	"github.com/google/uuid"
)

// Supervisor owns every live run, one per session.
type Supervisor struct {
	cfg        Config
	journal    Journal
	pub        Publisher
	broker     *askuser.Broker
	log        *slog.Logger
	runtimeDir string        // where per-run ask_user config files live
	runEnded   func()        // told after each run ends (may be nil)
	slots      *slots        // the cap on live processes and the line for it
	queueObs   QueueObserver // nil: nobody is told about the line
	line       LineStore     // nil: the line is kept in memory only
	recoverer  Recoverer     // nil: logs are not reconciled at start
	startGuard StartGuard    // nil: starts are not guarded
	leaseHeld  func() bool   // SetLeaseCheck

	ctx  context.Context // the server's lifetime; runs are its children
	mu   sync.Mutex
	runs map[string]*Run
	// starting marks sessions whose run is being started; the channel
	// closes when it has started or failed to. lineStarts marks those of
	// them started for work in line, which wait for the StartGuard: work
	// for them joins theirs in line rather than waiting with a page.
	starting   map[string]chan struct{}
	lineStarts map[string]bool
	wg         sync.WaitGroup
	closed     bool
	drain      // graceful shutdown (drain.go)
}

// Deps are a Supervisor's collaborators.
type Deps struct {
	Config     Config
	Journal    Journal
	Publisher  Publisher
	Broker     *askuser.Broker
	Log        *slog.Logger
	RuntimeDir string
	// RunEnded, if set, is called after each run has ended: asks it left
	// open are detached from then on (see server.Expirer). It must not block.
	RunEnded func()
	// MaxRuns caps the live claude processes; 0 = no cap. A session that
	// needs a process when all are taken waits in line (see slots.go).
	MaxRuns int
	Queue   QueueObserver // hears where waiting sessions stand; may be nil
	// Line, if set, keeps the prompts and answers waiting in line, so that
	// neither a restart nor a crash loses them (line.go).
	Line LineStore
	// Recover, if set, reconciles a session's log before each run of it
	// starts (recover.go).
	Recover Recoverer
	// StartGuard, if set, is held by every start of a session's run from
	// before the run is prepared (its Starter) until it is recorded open or
	// has failed to start.
	StartGuard StartGuard
}

// A StartGuard is held while a session's run is prepared and started: the
// server holds the session's worktree lock shared with it, so that no run
// starts while a member merges or discards the session's worktree, on any
// replica. release is called once. While it is held elsewhere it waits,
// or, when wait is false, returns an error that is ErrStartHeld.
//
// A message or an answer whose start finds the guard held does not wait
// with the member's page: it waits in line (kept, like work waiting for a
// slot), and its start there waits for the guard.
type StartGuard func(ctx context.Context, sessionID string, wait bool) (release func(), err error)

// ErrStartHeld says a session's StartGuard is held elsewhere (its worktree
// is being merged or discarded): the work waits in line.
var ErrStartHeld = errors.New("the session's worktree is being merged or discarded")

// waitsInLine says whether an attempt to run work now failed only because
// it must wait in line: for a slot, or for the session's StartGuard.
func waitsInLine(err error) bool {
	return errors.Is(err, errNoSlot) || errors.Is(err, ErrStartHeld) || errors.Is(err, errInLine)
}

// errInLine says earlier work of the session waits in line (or its
// waiter is still handing it to the run): later work joins it there.
var errInLine = errors.New("the session's earlier work waits in line")

// fromLine marks the context of a start for work in line: it waits for the
// session's StartGuard.
type fromLineKey struct{}

func withFromLine(ctx context.Context) context.Context {
	return context.WithValue(ctx, fromLineKey{}, true)
}

func isFromLine(ctx context.Context) bool { v, _ := ctx.Value(fromLineKey{}).(bool); return v }

// NewSupervisor returns a Supervisor whose runs live until ctx ends or
// Shutdown is called.
func NewSupervisor(ctx context.Context, d Deps) *Supervisor {
	return &Supervisor{cfg: d.Config, journal: d.Journal, pub: d.Publisher, broker: d.Broker,
		log: d.Log, runtimeDir: d.RuntimeDir, runEnded: d.RunEnded, ctx: ctx, runs: map[string]*Run{},
		slots: &slots{max: d.MaxRuns}, queueObs: d.Queue, line: d.Line, starting: map[string]chan struct{}{}, lineStarts: map[string]bool{},
		drain: drain{kick: make(chan struct{}, 1)}, recoverer: d.Recover, startGuard: d.StartGuard}
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
	// project now: a turn that waited (in line for a slot) is not sent if
	// its author may not, and a member who loses the right has their
	// running turn stopped (CheckAuthors). nil = anyone may.
	MayPrompt func(ctx context.Context, userID int64) (bool, error)
	// ModelURL is the model gateway's base URL; with Config.Gateway set, the
	// run's model traffic goes there with a token of its own.
	ModelURL string
	// Notices are recorded in the session when the run starts (workspace
	// files Parley refused to read, say).
	Notices []string
}

// Live returns the session's live run, if there is one.
func (s *Supervisor) Live(sessionID string) (*Run, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.runs[sessionID]
	return r, ok
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

// Prompt sends a user turn to the session's live process, starting one
// when there is none.
func (s *Supervisor) Prompt(ctx context.Context, sessionID string, start Starter, text string, by Author) error {
	return s.prompt(ctx, sessionID, start, QueuedWork{Text: text, By: by.Name, ByID: by.ID})
}

// PromptWork is Prompt for a prompt that waited elsewhere (w, which may be
// Parley's own, QueuedWork.Parley): a drain moved it here.
func (s *Supervisor) PromptWork(ctx context.Context, sessionID string, start Starter, w QueuedWork) error {
	return s.prompt(ctx, sessionID, start, QueuedWork{Text: w.Text, By: w.By, ByID: w.ByID, Parley: w.Parley})
}

func (s *Supervisor) prompt(ctx context.Context, sessionID string, start Starter, w QueuedWork) error {
	// A turn that waits in line says what it is, so that it can be kept
	// and a drain can move it.
	ctx = withQueuedWork(ctx, w)
	return s.withRun(ctx, sessionID, start, func(ctx context.Context, r *Run) error {
		reply := make(chan error, 1)
		return r.send(ctx, turnCmd{text: w.Text, by: Author{Name: w.By, ID: w.ByID}, line: lineOf(ctx), parley: w.Parley, reply: reply}, reply)
	})
}

// withRun calls f with the session's live run, starting one when there is
// none. A run that is ending (idle stop, exit) refuses commands with
// ErrRunEnded; f is then tried once more on a new run, so a message that
// races an ending process is not lost. When every slot is taken, f waits
// in line and withRun returns nil at once. Work ctx is marked with that
// was kept in line leaves it once f is done with it.
func (s *Supervisor) withRun(ctx context.Context, sessionID string, start Starter, f func(context.Context, *Run) error) error {
	err := s.runNow(ctx, sessionID, start, f)
	// Earlier work of the session was being handed to its run: f goes
	// behind it, or, if it was all handed over meanwhile, to the run.
	for try := 0; try < 3 && errors.Is(err, errInLine); try++ {
		if err = s.enqueue(ctx, sessionID, start, f, true); !errors.Is(err, errNotInLine) {
			return err
		}
		err = s.runNow(ctx, sessionID, start, f)
	}
	if waitsInLine(err) {
		return s.enqueue(ctx, sessionID, start, f, false)
	}
	s.leftLine(queuedWork(ctx), err)
	return err
}

// runNow is withRun's attempt without the line: errNoSlot when f must
// wait for a slot, ErrStartHeld when for the session's StartGuard.
func (s *Supervisor) runNow(ctx context.Context, sessionID string, start Starter, f func(context.Context, *Run) error) error {
	r, err := s.ensure(ctx, sessionID, start)
	if err != nil {
		return err
	}
	err = f(ctx, r)
	if !errors.Is(err, ErrRunEnded) {
		return err
	}
	select {
	case <-r.Done():
	case <-ctx.Done():
		return ctx.Err()
	}
	if r, err = s.ensure(ctx, sessionID, start); err != nil {
		return err
	}
	return f(ctx, r)
}

// Interrupt stops the session's current turn.
func (s *Supervisor) Interrupt(ctx context.Context, sessionID, by string) error {
	r, ok := s.Live(sessionID)
	if !ok {
		return ErrRunEnded
	}
	return r.send(ctx, interruptCmd{by: by, reply: make(chan error, 1)}, nil)
}

// Answer delivers a member's response to a pending ask of the session. An
// ask still awaited by the live process gets its answer there; an ask that
// outlived its process (a crash, a restart, an idle stop) is resolved and
// its answer sent as the next user turn, starting the session again
// (--resume) when no process is live.
func (s *Supervisor) Answer(ctx context.Context, sessionID string, start Starter, inputID string, resp Response) error {
	return s.answer(ctx, sessionID, start, QueuedWork{InputID: inputID, Resp: resp})
}

func (s *Supervisor) answer(ctx context.Context, sessionID string, start Starter, w QueuedWork) error {
	inputID, resp := w.InputID, w.Resp
	if _, ok := s.Live(sessionID); !ok {
		if _, err := loadPending(ctx, s.journal, sessionID, inputID); err != nil {
			return err
		}
	}
	// An answer that waits in line says what it is too (drain.go).
	ctx = withQueuedWork(ctx, w)
	return s.withRun(ctx, sessionID, start, func(ctx context.Context, r *Run) error {
		reply := make(chan error, 1)
		return r.send(ctx, answerCmd{id: inputID, resp: resp, reply: reply}, reply)
	})
}

// SetLeaseCheck sets what every run asks before it writes to the log:
// whether this replica surely still holds its lease (package cluster).
// While it does not, writes wait: a replica paused past its lease must not
// write to sessions another replica may have taken over, until its
// heartbeat either renews the lease or fences those runs (Fence). Set it
// before runs start.
func (s *Supervisor) SetLeaseCheck(held func() bool) { s.leaseHeld = held }

// errFenced is what a fenced run's writes return (Fence).
var errFenced = errors.New("the run was taken over by another replica")

// Fence ends the session's run, if it is the run runID, without writing
// anything more to the session's log: another replica took the session
// over while this one's lease had lapsed, and writes it now. The run is
// marked and its model token revoked at once (its claude gets nothing more
// from the model: package gateway); its process group ends as the run does.
func (s *Supervisor) Fence(sessionID string, runID int64) {
	if r, ok := s.Live(sessionID); ok && r.id == runID {
		r.fenced.Store(true)
		r.revokeModel()
		r.cancel()
	}
}

// Stop ends the session's process, if any, and waits for its run to end.
func (s *Supervisor) Stop(sessionID string) {
	if r, ok := s.Live(sessionID); ok {
		r.Stop()
	}
}

// StopProject ends every run of the project and waits for them.
func (s *Supervisor) StopProject(projectID int64) {
	s.mu.Lock()
	var runs []*Run
	for _, r := range s.runs {
		if r.spec.ProjectID == projectID {
			runs = append(runs, r)
		}
	}
	s.mu.Unlock()
	for _, r := range runs {
		r.Stop()
	}
}

// Shutdown kills every process group and waits for every run to end.
func (s *Supervisor) Shutdown() {
	s.mu.Lock()
	s.closed = true
	runs := make([]*Run, 0, len(s.runs))
	for _, r := range s.runs {
		runs = append(runs, r)
	}
	s.mu.Unlock()
	for _, r := range runs {
		r.cancel()
	}
	s.wg.Wait()
}

// ensure returns the session's live run or starts one with start's
// options; errNoSlot when every slot is taken, ErrStartHeld when the
// session's StartGuard is held elsewhere, errInLine when the session's
// earlier work is in line and not yet handed to its run (work from the
// line itself goes on).
// s.mu is never held across the database or the process start: a session
// being started is marked in s.starting, and a second caller waits for it.
func (s *Supervisor) ensure(ctx context.Context, sessionID string, start Starter) (*Run, error) {
	fromLine := isFromLine(ctx)
	for {
		s.mu.Lock()
		if !fromLine && s.slots.isOpen(sessionID) {
			s.mu.Unlock()
			return nil, errInLine
		}
		if r, ok := s.runs[sessionID]; ok {
			s.mu.Unlock()
			return r, nil
		}
		wait, starting := s.starting[sessionID]
		if !starting {
			if s.closed {
				s.mu.Unlock()
				return nil, errClosed
			}
			if s.draining {
				s.mu.Unlock()
				return nil, ErrDraining
			}
			if !s.slots.tryAcquire() {
				s.mu.Unlock()
				return nil, errNoSlot
			}
			wait = make(chan struct{})
			s.starting[sessionID] = wait
			if fromLine {
				s.lineStarts[sessionID] = true
			}
			s.mu.Unlock()
			return s.startNow(ctx, sessionID, start, wait)
		}
		lineStart := s.lineStarts[sessionID]
		s.mu.Unlock()
		if lineStart && !fromLine {
			return nil, errInLine // its work joins the line behind the start's
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// startNow starts the session's run in a slot already taken, which the
// run gives back when it ends (or at once, when it does not start); the
// caller has marked the session starting. A start for work in line
// (withFromLine) waits for the session's StartGuard; any other is refused
// with ErrStartHeld while the guard is held elsewhere.
func (s *Supervisor) startNow(ctx context.Context, sessionID string, start Starter, starting chan struct{}) (*Run, error) {
	var r *Run
	var release func()
	var err error
	if s.startGuard != nil {
		release, err = s.startGuard(ctx, sessionID, isFromLine(ctx))
		if err == nil {
			// A drain or a shutdown may have begun while it waited.
			s.mu.Lock()
			switch {
			case s.closed:
				err = errClosed
			case s.draining:
				err = ErrDraining
			}
			s.mu.Unlock()
		}
	}
	if err == nil {
		var o Options
		if o, err = start(ctx); err == nil {
			r, err = s.start(o) // the run is recorded open when it returns
		}
	}
	if release != nil {
		release()
	}
	if err != nil {
		s.releaseSlot()
	}
	s.mu.Lock()
	delete(s.starting, sessionID) // start put the run in s.runs
	delete(s.lineStarts, sessionID)
	s.mu.Unlock()
	close(starting)
	return r, err
}

// start launches the process and the run's goroutines. The session is
// marked starting, so no other run of it starts meanwhile.
func (s *Supervisor) start(o Options) (*Run, error) {
	// The log's last seq is read here, after the previous run of the
	// session has left the map (it does so only once its last event is
	// written), so the new run continues the log exactly.
	goOn := s.reconcile(s.ctx, o)
	defer func() {
		if goOn != nil { // the run did not start: the next pass over the line sends it
			s.releaseLine(goOn)
		}
	}()
	lctx, lcancel := context.WithTimeout(s.ctx, writeTimeout)
	last, err := s.journal.LastSeq(lctx, o.SessionID)
	lcancel()
	if err != nil {
		return nil, fmt.Errorf("read the session log: %w", err)
	}
	if err := ensureRuntimeDir(s.runtimeDir); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(s.ctx)
	r := &Run{seq: last, spec: o.Spec, journal: s.journal, pub: s.pub, broker: s.broker, leaseHeld: s.leaseHeld,
		askTimeout: o.AskTimeout, askMaxTimeout: o.AskMaxTimeout, permTimeout: o.PermissionTimeout, idleTimeout: o.IdleTimeout, started: o.Resume,
		cmds: make(chan command), lines: make(chan Line, lineBuffer), writes: make(chan []byte, 64),
		exited: make(chan exitInfo, 1), done: make(chan struct{}), finished: make(chan struct{}),
		cancel: cancel, pending: map[string]pendingAsk{}, plans: map[string]string{}}
	r.mayPrompt = o.MayPrompt
	r.runLimits = runLimits{stallTimeout: o.StallTimeout, stallGrace: o.StallGrace, budgetCheck: o.BudgetCheck,
		outcome: map[bool]string{true: StatusEnded, false: "idle"}[o.Resume]}
	r.log = s.log.With("session_id", o.SessionID)
	r.othersWaiting = func() bool { return s.slots.queued() > 0 }
	r.closeLater = s.closeRunLater
	r.stateChanged = s.kickDrain
	var unregister func()
	if o.RelayURL != "" {
		token := askuser.NewToken()
		var path string
		var err error
		if o.AskOverHTTP {
			path, err = askHTTPConfig(s.runtimeDir, AskHTTPURL(o.RelayURL), token)
			r.spec.MCPConfigPath = path
		} else {
			path, err = askuser.WriteConfig(s.runtimeDir, askuser.Config{URL: o.RelayURL, Token: token,
				TimeoutSeconds: int(o.AskTimeout / time.Second), MaxTimeoutSeconds: int(o.AskMaxTimeout / time.Second)})
			r.spec.AskConfigPath = path
		}
		if err != nil {
			cancel()
			return nil, fmt.Errorf("write ask_user config: %w", err)
		}
		unregister = s.broker.RegisterWithConfig(token, r, askuser.Config{
			TimeoutSeconds: int(o.AskTimeout / time.Second), MaxTimeoutSeconds: int(o.AskMaxTimeout / time.Second)})
	}
	r.revokeModel = s.admitModel(r, o)
	cleanup := func() {
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
		cancel()
		return nil, err
	}
	p, err := s.cfg.start(ctx, r.spec)
	if err != nil {
		cleanup()
		cancel()
		return nil, err
	}
	r.proc = p
	if r.id, err = s.journal.RunStarted(ctx, o.SessionID, p.cmd.Process.Pid); err != nil {
		r.log.Error("record run start", "err", err)
	}
	r.log = r.log.With("run_id", r.id, "pid", p.cmd.Process.Pid)
	r.log.Info("claude started", "resume", o.Resume)
	r.recordJSON(ctx, TypeRunStarted, map[string]any{"pid": p.cmd.Process.Pid, "run_id": r.id, "resume": o.Resume})
	for _, n := range o.Notices {
		r.notice(ctx, "warn", n)
	}
	r.onEnd = func() {
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
	// Shutdown cancels what is in the map; a run that lands there after
	// it began is cancelled here.
	s.mu.Lock()
	s.runs[o.SessionID] = r
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
	if goOn != nil {
		s.goOnFirst(r, goOn)
		goOn = nil
	}
	return r, nil
}

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
	err := s.withRun(ctx, o.SessionID, With(o), func(ctx context.Context, r *Run) error {
		r.post(noticeCmd{level: "warn", text: "Claude could not resume the earlier conversation (its transcript was never saved), " +
			"so Parley started a new one and sent your last message to it again."})
		for _, t := range turns {
			reply := make(chan error, 1)
			err := r.send(ctx, turnCmd{text: t.text, by: t.by, parley: t.parley, resend: true, reply: reply}, reply)
			if err != nil && !errors.Is(err, ErrNotAllowed) { // one not allowed: the page says so
				return fmt.Errorf("resend turn to the fresh conversation: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		log.Error("start a fresh conversation", "err", err)
	}
}

// Count is the number of live runs.
func (s *Supervisor) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.runs)
}

// Queued is the number of sessions waiting for a slot.
func (s *Supervisor) Queued() int { return s.slots.queued() }
