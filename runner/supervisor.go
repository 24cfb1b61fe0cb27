package runner

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"parley/askuser"
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
	slots      *slots        // the cap on live processes and the queue for it
	cpu        *cpuLine      // the CPU budget of working sessions and its line (cpu.go)
	queueObs   QueueObserver // nil: nobody is told about the queue
	kept       QueueStore    // nil: the queue is kept in memory only
	recoverer  Recoverer     // nil: logs are not reconciled at start
	startGuard StartGuard    // nil: starts are not guarded
	leaseHeld  func() bool   // SetLeaseCheck
	warms      warmSet       // processes started ahead, not yet adopted (warm.go)
	window     startWindow   // starts between their process and going live (supervisor_window.go)

	startHook  func(string, StartPoint)                         // SetStartHook (supervisor_window.go)
	aheadYield func(ctx context.Context, sessionID string) bool // SetAheadYield (ahead_yield.go)

	ctx  context.Context // the server's lifetime; runs are its children
	mu   sync.Mutex
	runs map[string]*Run
	// starting marks sessions whose run is being started; the channel
	// closes when it has started or failed to. queueStarts marks those of
	// them started for work in the queue, which wait for the StartGuard: work
	// for them joins theirs in the queue rather than waiting with a page.
	starting    map[string]chan struct{}
	queueStarts map[string]bool
	wg          sync.WaitGroup
	closed      bool
	drain       // graceful shutdown (drain.go)
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
	// needs a process when all are taken waits in the queue (see slots.go).
	MaxRuns int
	// CPURuns is the CPU budget: sessions that may be working (streaming
	// or running tools) at once; a prompt that would set one more to work
	// waits in the CPU line (cpu.go). 0 = no budget.
	CPURuns int
	Queue   QueueObserver // hears where waiting sessions stand; may be nil
	// QueueStore, if set, keeps the prompts and answers waiting in the
	// queue, so that neither a restart nor a crash loses them (queue.go).
	QueueStore QueueStore
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
// with the member's page: it waits in the queue (kept, like work waiting for a
// slot), and its start there waits for the guard.
type StartGuard func(ctx context.Context, sessionID string, wait bool) (release func(), err error)

// ErrStartHeld says a session's StartGuard is held elsewhere (its worktree
// is being merged or discarded): the work waits in the queue.
var ErrStartHeld = errors.New("the session's worktree is being merged or discarded")

// waitsInQueue says whether an attempt to run work now failed only because
// it must wait in the queue: for a slot, or for the session's StartGuard.
func waitsInQueue(err error) bool {
	return errors.Is(err, errNoSlot) || errors.Is(err, ErrStartHeld) || errors.Is(err, errQueued)
}

// errQueued says earlier work of the session waits in the queue (or its
// waiter is still handing it to the run): later work joins it there.
var errQueued = errors.New("the session's earlier work waits in line")

// NewSupervisor returns a Supervisor whose runs live until ctx ends or
// Shutdown is called.
func NewSupervisor(ctx context.Context, d Deps) *Supervisor {
	return &Supervisor{cfg: d.Config, journal: d.Journal, pub: d.Publisher, broker: d.Broker,
		log: d.Log, runtimeDir: d.RuntimeDir, runEnded: d.RunEnded, ctx: ctx, runs: map[string]*Run{},
		slots: &slots{max: d.MaxRuns}, cpu: &cpuLine{max: d.CPURuns, admitted: map[string]int{}}, queueObs: d.Queue, kept: d.QueueStore, starting: map[string]chan struct{}{}, queueStarts: map[string]bool{},
		drain: drain{kick: make(chan struct{}, 1)}, recoverer: d.Recover, startGuard: d.StartGuard}
}

// Live returns the session's live run, if there is one.
func (s *Supervisor) Live(sessionID string) (*Run, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.runs[sessionID]
	return r, ok
}

// Prompt sends a user turn to the session's live process, starting one
// when there is none.
func (s *Supervisor) Prompt(ctx context.Context, sessionID string, start Starter, text string, by Author) error {
	return s.prompt(ctx, sessionID, start, QueuedWork{Text: text, By: by.Name, ByID: by.ID})
}

// PromptWork is Prompt for a prompt that waited elsewhere (w, which may be
// Parley's own, QueuedWork.Parley): a drain moved it here.
func (s *Supervisor) PromptWork(ctx context.Context, sessionID string, start Starter, w QueuedWork) error {
	return s.prompt(ctx, sessionID, start, QueuedWork{Text: w.Text, By: w.By, ByID: w.ByID, Parley: w.Parley, Content: w.Content, Attached: w.Attached})
}

func (s *Supervisor) prompt(ctx context.Context, sessionID string, start Starter, w QueuedWork) error {
	// A turn that would set one more session working waits for the CPU
	// budget (cpu.go), and is sent from its line.
	through, err := s.cpuGate(ctx, sessionID, start, &w)
	if !through {
		return err
	}
	defer s.cpuDone(sessionID)
	return s.sendPrompt(ctx, sessionID, start, w)
}

// sendPrompt hands the turn w to the session's run (withRun).
func (s *Supervisor) sendPrompt(ctx context.Context, sessionID string, start Starter, w QueuedWork) error {
	// A turn that waits in the queue says what it is (work), so that it can be
	// kept and a drain can move it.
	return s.withRun(ctx, sessionID, start, job{work: &w, do: func(ctx context.Context, r *Run, item int64) error {
		reply := make(chan error, 1)
		return r.send(ctx, turnCmd{text: w.Text, by: Author{Name: w.By, ID: w.ByID}, item: item, parley: w.Parley, content: w.Content, attached: w.Attached, reply: reply}, reply)
	}}, false)
}

// withRun hands j to the session's live run, starting one when there is
// none. A run that is ending (idle stop, exit) refuses commands with
// ErrRunEnded; j is then tried once more on a new run, so a message that
// races an ending process is not lost. When every slot is taken, j waits
// in the queue and withRun returns nil at once. j's work, if it was kept in
// line, leaves it once j is done. fromQueue says j comes from the queue: its
// start waits for the session's StartGuard, and goes before later work.
func (s *Supervisor) withRun(ctx context.Context, sessionID string, start Starter, j job, fromQueue bool) error {
	err := s.runNow(ctx, sessionID, start, j, fromQueue)
	// Earlier work of the session was being handed to its run: j goes
	// behind it, or, if it was all handed over meanwhile, to the run.
	for try := 0; try < 3 && errors.Is(err, errQueued); try++ {
		if err = s.enqueue(ctx, sessionID, start, j, true); !errors.Is(err, errNotQueued) {
			return err
		}
		err = s.runNow(ctx, sessionID, start, j, fromQueue)
	}
	if waitsInQueue(err) {
		return s.enqueue(ctx, sessionID, start, j, false)
	}
	s.settleQueued(j.work, err)
	return err
}

// runNow is withRun's attempt without the queue: errNoSlot when j must
// wait for a slot, ErrStartHeld when for the session's StartGuard.
func (s *Supervisor) runNow(ctx context.Context, sessionID string, start Starter, j job, fromQueue bool) error {
	r, err := s.ensure(ctx, sessionID, start, fromQueue)
	if err != nil {
		return err
	}
	err = j.do(ctx, r, queuedItem(j.work))
	if !errors.Is(err, ErrRunEnded) {
		return err
	}
	select {
	case <-r.Done():
	case <-ctx.Done():
		return ctx.Err()
	}
	if r, err = s.ensure(ctx, sessionID, start, fromQueue); err != nil {
		return err
	}
	return j.do(ctx, r, queuedItem(j.work))
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
	// An answer that waits in the queue says what it is too (drain.go).
	return s.withRun(ctx, sessionID, start, job{work: &w, do: func(ctx context.Context, r *Run, _ int64) error {
		reply := make(chan error, 1)
		return r.send(ctx, answerCmd{id: inputID, resp: resp, reply: reply}, reply)
	}}, false)
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
// With runID 0 a start of the session in its window (Starting) is fenced
// too: it ends without going live (supervisor_window.go).
func (s *Supervisor) Fence(sessionID string, runID int64) {
	var started *Run // the run a start fenced now put live already
	if runID == 0 {
		var inFlight bool
		if started, inFlight = s.window.fence(sessionID); inFlight {
			s.startPoint(sessionID, StartStopNoted)
		}
	}
	if r, ok := s.Live(sessionID); ok && (r.id == runID || r == started) {
		r.fenced.Store(true)
		r.revokeModel()
		r.cancel()
	}
}

// Stop ends the session's process, if any, and waits for its run to end;
// a start of the session under way ends too (supervisor_window.go).
func (s *Supervisor) Stop(sessionID string) {
	s.stopStarts(sessionID, 0)
	if r, ok := s.Live(sessionID); ok {
		r.Stop()
	}
}

// StopProject ends every run of the project and waits for them.
func (s *Supervisor) StopProject(projectID int64) {
	s.stopStarts("", projectID)
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
	s.warms.killAll()
	for _, r := range runs {
		r.cancel()
	}
	s.wg.Wait()
}

// Count is the number of live runs.
func (s *Supervisor) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.runs)
}

// Queued is the number of sessions waiting for a slot.
func (s *Supervisor) Queued() int { return s.slots.queued() }
