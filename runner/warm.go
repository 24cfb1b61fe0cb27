package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"parley/askuser"
	"parley/streamjson"
)

// Warm is a claude process started ahead, for a new session that has no
// row yet (package warm keeps a pool of them). It is started exactly as a
// run is (Config.start: the same sandbox, guard, cgroup and limits), with
// the session id, working directory, instructions, ask config and model
// token the session's run would get; the CLI, reading stream-json, prints
// nothing and asks the model nothing until its first user line.
//
// It holds a slot of the run cap from its start until it is taken
// (Release) or killed, so warm processes never make a run wait: a run
// that finds every slot taken kills one (yieldWarm). A run adopts it
// (Options.Warm) at most once; a Warm killed or adopted is never used again.
type Warm struct {
	s        *Supervisor
	spec     Spec // as started: its ask config, instructions file and model token
	askToken string
	askCfg   askuser.Config
	proc     *process
	ctx      context.Context
	cancel   context.CancelFunc
	revoke   func() // ends its model token
	// unregister ends its ask token (registered at its start: the CLI
	// connects to the ask server as it starts, before any run adopts it).
	unregister func()
	files      []string
	owner      atomic.Pointer[Run] // the run that adopted it: whose turn the gateway bills
	used       atomic.Bool         // adopted or killed
	primed     chan struct{}       // closed once its prime ended (prime.go); primeErr says how
	primeErr   error
	holding    atomic.Bool   // it holds a slot
	ended      chan struct{} // closed once a kill has reaped it
}

// errWarmUsed says a warm process was adopted or killed already.
var errWarmUsed = errors.New("the warm process was used already")

// MayWarm says whether processes may be started ahead now: not after
// Shutdown, not while draining, and only while this replica surely holds
// its lease (SetLeaseCheck).
func (s *Supervisor) MayWarm() bool {
	s.mu.Lock()
	closed, draining := s.closed, s.draining
	s.mu.Unlock()
	return !closed && !draining && (s.leaseHeld == nil || s.leaseHeld())
}

// StartWarm starts a process ahead with o (a fresh session id, never
// --resume) in a free slot: errNoSlot when none is free or sessions wait.
func (s *Supervisor) StartWarm(o Options) (*Warm, error) {
	if !s.MayWarm() {
		return nil, ErrDraining
	}
	if o.Resume {
		return nil, errors.New("a warm process starts a new conversation, never a resumed one")
	}
	if !s.slots.tryAcquire() {
		return nil, errNoSlot
	}
	w, err := s.startWarm(o)
	if err != nil {
		s.releaseSlot()
		return nil, err
	}
	w.holding.Store(true)
	if !s.warms.add(w) { // Shutdown came meanwhile
		w.Kill()
		return nil, errClosed
	}
	return w, nil
}

// startWarm prepares w's files and token and starts its process.
func (s *Supervisor) startWarm(o Options) (*Warm, error) {
	if err := ensureRuntimeDir(s.runtimeDir); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(s.ctx)
	w := &Warm{s: s, spec: o.Spec, ctx: ctx, cancel: cancel, revoke: func() {}, ended: make(chan struct{})}
	if err := w.prepare(o); err != nil {
		w.removeFiles()
		cancel()
		return nil, err
	}
	p, err := s.cfg.start(ctx, w.spec)
	if err != nil {
		w.removeFiles()
		cancel()
		return nil, err
	}
	w.proc = p
	w.primed = make(chan struct{})
	if gw := s.primerFor(w.spec); gw != nil {
		// Primed as a resume ahead is (prime.go), off the pool's path: a
		// run that adopts w waits for it (adopt).
		began := time.Now()
		go func() {
			defer close(w.primed)
			if err := prime(p, gw, w.spec.ModelToken, s.cfg.PrimeTimeout, ctx.Done()); err != nil {
				w.primeErr = err
				s.log.Warn("prime a process started ahead", "pid", w.Pid(), "err", err)
				return
			}
			s.log.Info("claude started ahead is ready", "pid", w.Pid(), "after", time.Since(began).Round(time.Millisecond))
		}()
		return w, nil
	}
	close(w.primed)
	// Without a gateway to answer a prime, it is readied with initialize
	// (ahead.go): the CLI does its start-up work now rather than on the
	// first message, and the run that adopts it drops the answer
	// (readyAnswer). The pipe takes the line at once: nothing else writes
	// it before a run adopts the process.
	if line, err := json.Marshal(streamjson.NewInitialize(primeID)); err == nil {
		if _, err := p.stdin.Write(append(line, '\n')); err != nil {
			s.log.Warn("ready a process started ahead", "err", err)
		}
	}
	return w, nil
}

// prepare writes w's ask config and instructions file and admits it to
// the model gateway, as Supervisor.prepare does for a run; the ask token
// is registered with the broker only when a run adopts w.
func (w *Warm) prepare(o Options) error {
	s := w.s
	if o.RelayURL != "" {
		w.askToken = askuser.NewToken()
		w.askCfg = askuser.Config{TimeoutSeconds: int(o.AskTimeout / time.Second), MaxTimeoutSeconds: int(o.AskMaxTimeout / time.Second)}
		var path string
		var err error
		if o.AskOverHTTP {
			path, err = askHTTPConfig(s.runtimeDir, AskHTTPURL(o.RelayURL), w.askToken)
			w.spec.MCPConfigPath = path
		} else {
			c := w.askCfg
			c.URL, c.Token = o.RelayURL, w.askToken
			path, err = askuser.WriteConfig(s.runtimeDir, c)
			w.spec.AskConfigPath = path
		}
		if err != nil {
			return fmt.Errorf("write ask_user config: %w", err)
		}
		w.files = append(w.files, path)
		// The CLI connects to the ask server while it starts, and keeps
		// the asker it found then: one that asks through whichever run
		// adopts the process.
		w.unregister = s.broker.RegisterWithConfig(w.askToken, warmAsker{w}, w.askCfg)
	}
	if s.cfg.Gateway != nil && o.ModelURL != "" {
		token, revoke := s.cfg.Gateway.Admit(o.ProjectID, o.SessionID, w.turnUser)
		w.spec.ModelURL, w.spec.ModelToken, w.revoke = o.ModelURL, token, revoke
	}
	path, err := writeInstructions(s.runtimeDir, w.spec.Instructions)
	w.spec.InstructionsPath = path
	if path != "" {
		w.files = append(w.files, path)
	}
	return err
}

// turnUser is whose turn the adopting run works on (nobody's before).
func (w *Warm) turnUser() string {
	if r := w.owner.Load(); r != nil {
		return r.turnUser()
	}
	return ""
}

// removeFiles ends w's model and ask tokens and removes its files.
func (w *Warm) removeFiles() {
	w.revoke()
	if w.unregister != nil {
		w.unregister()
	}
	for _, path := range w.files {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			w.s.log.Warn("remove a warm process's file", "err", err)
		}
	}
}

// Pid is the process id Parley started (the guard's, with a guard).
func (w *Warm) Pid() int { return w.proc.cmd.Process.Pid }

// Ready says whether w has finished its prime (prime.go) and may take a
// message at once; a w that could not be primed is never ready.
func (w *Warm) Ready() bool {
	select {
	case <-w.primed:
		return w.primeErr == nil
	default:
		return false
	}
}

// SessionID is the Parley session id w was started for.
func (w *Warm) SessionID() string { return w.spec.SessionID }

// Ended is closed once w was killed and reaped.
func (w *Warm) Ended() <-chan struct{} { return w.ended }

// Used says whether w was adopted or killed.
func (w *Warm) Used() bool { return w.used.Load() }

// Alive says whether w's process is still running (not exited, not a
// zombie), so that a run adopting it gets a process that reads its turn.
func (w *Warm) Alive() bool {
	select {
	case <-w.primed:
		if w.primeErr != nil {
			return false // not ready, and never will be
		}
	default:
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", w.Pid()))
	if err != nil {
		return false
	}
	return stateOf(b) != 'Z' && stateOf(b) != 'X'
}

// stateOf is the state letter of a /proc/<pid>/stat line (after "(comm) ").
func stateOf(stat []byte) byte {
	for i := len(stat) - 1; i > 0; i-- {
		if stat[i] == ')' && i+2 < len(stat) {
			return stat[i+2]
		}
	}
	return 0
}

// Release gives w's slot back: a session took w, and its start takes a
// slot of its own. Idempotent.
func (w *Warm) Release() {
	if w.holding.CompareAndSwap(true, false) {
		w.s.releaseSlot()
	}
}

// Kill ends w, if no run adopted it, and returns once it is reaped: its
// whole process group and cgroup killed, its files and token gone, its
// slot given back. Idempotent.
func (w *Warm) Kill() {
	if !w.used.CompareAndSwap(false, true) {
		return
	}
	// Nothing to save: the CLI never had a turn, so no transcript.
	_ = syscall.Kill(-w.Pid(), syscall.SIGKILL)
	w.cancel()
	_ = w.proc.cmd.Wait()
	if err := w.proc.end(); err != nil {
		w.s.log.Warn("kill what is left of a warm process", "err", err)
	}
	w.removeFiles()
	w.Release()
	w.s.warms.remove(w)
	close(w.ended)
}

// SlotFree says whether a slot is free now with nobody waiting for one:
// a process started ahead would get it.
func (s *Supervisor) SlotFree() bool {
	q := s.slots
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.waiting) == 0 && (q.max <= 0 || q.used < q.max)
}

// warmAsker is a warm process's Asker: the run that adopted it.
type warmAsker struct{ w *Warm }

func (a warmAsker) Ask(ctx context.Context, f askuser.Form) (askuser.Answer, error) {
	r := a.w.owner.Load()
	if r == nil {
		return askuser.Answer{}, errors.New("no session has taken this claude process yet")
	}
	return r.Ask(ctx, f)
}
