package runner

import (
	"sync"
)

// adopt is the start of o's run in o.Warm's process, already running: no
// files to write, no process to start. The run takes over w's files,
// token and process; its options other than w's (timeouts, limits, who
// may prompt) are o's, read now. errWarmUsed when w was used already;
// the caller then starts the run cold.
func (s *Supervisor) adopt(o Options, last int64) (*Run, error) {
	w := o.Warm
	if w.spec.SessionID != o.SessionID || w.spec.ClaudeSessionID != o.ClaudeSessionID || !w.used.CompareAndSwap(false, true) {
		return nil, errWarmUsed
	}
	<-w.primed // within primeTimeout; a start that got here meanwhile waits as a cold one would
	if !w.Alive() {
		w.used.Store(false) // for Kill to reap it
		w.Kill()
		return nil, errWarmUsed
	}
	if err := s.readyToRecord(o.SessionID); err != nil { // supervisor_window.go
		w.used.Store(false) // for Kill to reap it
		w.Kill()
		return nil, err
	}
	w.Release()
	s.warms.remove(w)
	r := s.newRun(o, last, w.cancel)
	r.spec = w.spec
	r.revokeModel = w.revoke
	w.owner.Store(r) // its asks (warmAsker) and model turns are the run's now
	cleanup := w.removeFiles
	s.started(w.ctx, r, w.proc, o)
	s.startPoint(o.SessionID, StartRecorded)
	r.onEnd = s.onRunEnd(r, o, cleanup)
	if err := s.launch(w.ctx, w.cancel, r, w.proc); err != nil {
		s.endUnlaunched(r, w.proc.kill, err)
		cleanup()
		w.cancel()
		return nil, err
	}
	r.log.Info("claude started ahead taken over", "warm_pid", w.Pid())
	return r, nil
}

// warmSet is the supervisor's warm processes not yet adopted or killed,
// so that Shutdown ends them and a run short of a slot can take one's.
type warmSet struct {
	mu     sync.Mutex
	m      map[*Warm]struct{}
	closed bool
}

// add puts w in the set; false after killAll.
func (ws *warmSet) add(w *Warm) bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.closed {
		return false
	}
	if ws.m == nil {
		ws.m = map[*Warm]struct{}{}
	}
	ws.m[w] = struct{}{}
	return true
}

func (ws *warmSet) remove(w *Warm) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	delete(ws.m, w)
}

// holder is a warm process that still holds a slot, or nil.
func (ws *warmSet) holder() *Warm {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for w := range ws.m {
		if w.holding.Load() && !w.used.Load() {
			return w
		}
	}
	return nil
}

// killAll kills every warm process and takes no more.
func (ws *warmSet) killAll() {
	ws.mu.Lock()
	ws.closed = true
	all := make([]*Warm, 0, len(ws.m))
	for w := range ws.m {
		all = append(all, w)
	}
	ws.mu.Unlock()
	for _, w := range all {
		w.Kill()
	}
}

// yieldWarm kills a warm process that holds a slot, so that a run (or the
// head of the queue) gets it: warm processes never make a run wait.
// It reports whether it freed one.
func (s *Supervisor) yieldWarm() bool {
	w := s.warms.holder()
	if w == nil {
		return false
	}
	s.log.Info("a run needs a slot: ending a warm process", "pid", w.Pid())
	w.Kill()
	return true
}

// WarmCount is how many warm processes are neither adopted nor killed.
func (s *Supervisor) WarmCount() int {
	s.warms.mu.Lock()
	defer s.warms.mu.Unlock()
	return len(s.warms.m)
}

// slotFromWarm hands the slot of a warm process to a run that found none
// free (and no session waiting before it), and kills that process off the
// caller's path: warm processes never make a run wait. It reports whether
// the caller now holds a slot.
func (s *Supervisor) slotFromWarm() bool {
	if s.slots.queued() > 0 {
		return false // the queue goes first; reapIdle frees warm slots for it
	}
	w := s.warms.holder()
	if w == nil || !w.holding.CompareAndSwap(true, false) {
		return false
	}
	s.log.Info("a run needs a slot: ending a warm process", "pid", w.Pid())
	s.wg.Add(1)
	go func() { defer s.wg.Done(); w.Kill() }()
	return true
}

// dropUnadopted kills w, off the caller's path, if no run adopted it: a
// start that took a process ahead and failed before adopting it (its log
// could not be read, say) leaves nothing running.
func (s *Supervisor) dropUnadopted(w *Warm) {
	if w == nil || w.used.Load() {
		return
	}
	s.wg.Add(1)
	go func() { defer s.wg.Done(); w.Kill() }()
}
