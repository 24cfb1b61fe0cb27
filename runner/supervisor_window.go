package runner

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"
)

// The window of a start: from the moment a start may begin its work (it
// holds the session's StartGuard, or needs none) until its run is live in
// the supervisor's map, or the start failed. Its process is spawned,
// resumed, primed (prime.go) and recorded open in that window.

// StartPoint names a moment in the window of a start (SetStartHook).
type StartPoint string

// The moments a start hook hears of.
const (
	// StartSpawned: a cold start's process was started; nothing primed or
	// recorded yet.
	StartSpawned StartPoint = "spawned"
	// StartReady: the process is ready (primed, when it is primed; a warm
	// process taken), and the run is not recorded yet.
	StartReady StartPoint = "ready"
	// StartRecorded: the run is recorded open and not yet live.
	StartRecorded StartPoint = "recorded"
	// StartStopNoted: a Stop, StopProject or Fence marked the start (heard
	// in the stopper's goroutine, before it waits for the start).
	StartStopNoted StartPoint = "stop-noted"
)

// SetStartHook has h told of each StartPoint a start reaches, in the
// start's goroutine, which waits for h: tests hold a start there to land a
// stop or a lease loss in its window. Set it before starts begin; nil = none.
func (s *Supervisor) SetStartHook(h func(sessionID string, at StartPoint)) { s.startHook = h }

// startPoint tells the start hook, if any, that the session's start is at.
func (s *Supervisor) startPoint(sessionID string, at StartPoint) {
	if s.startHook != nil {
		s.startHook(sessionID, at)
	}
}

// A stop that lands in the window ends the start as it would end a live
// run: Stop and StopProject mark it and wait until it has left its window
// (its process killed and reaped, or its run live and then stopped), and
// Fence marks it when another replica took the session over while this
// replica's lease had lapsed. A start looks at its marks before it records
// its run and again as it goes live, atomically with entering the map of
// live runs (launch); its prime watches them throughout (prime.go). It
// records its run, and goes live, only while this replica surely holds its
// lease, so a fence that missed it cannot have happened meanwhile
// (TestStopInAResumeAheadsWindow, TestStopInAColdStartsWindow,
// TestLeaseLossEndsAStartInFlight).
//
// A start that waits for the session's StartGuard is not in its window
// yet: a merge holds that guard and stops the session's run, and the
// message that waits for the merge starts the session once it is done.

// errStoppedWhileStarting says the session (or its project) was stopped
// while its run was being started.
var errStoppedWhileStarting = errors.New("the session was stopped while its process was being started")

// inFlight is one start in its window.
type inFlight struct {
	sessionID string
	stopped   chan struct{} // closed by a stop or a fence
	done      chan struct{} // closed once the start left its window
	// Guarded by startWindow.mu:
	projectID    int64   // once the start's options are known
	projectStops []int64 // StopProject calls before projectID was known
	fenced       bool    // Fence: the session is another replica's
	run          *Run    // the run it put in the map, once live
}

// startWindow is the starts in their window, one a session. The zero
// value is ready.
type startWindow struct {
	mu sync.Mutex
	m  map[string]*inFlight
}

// enter puts the session's start in its window; leave takes it out.
func (w *startWindow) enter(sessionID string) *inFlight {
	f := &inFlight{sessionID: sessionID, stopped: make(chan struct{}), done: make(chan struct{})}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[string]*inFlight{}
	}
	w.m[sessionID] = f
	return f
}

func (w *startWindow) leave(f *inFlight) {
	w.mu.Lock()
	if w.m[f.sessionID] == f {
		delete(w.m, f.sessionID)
	}
	w.mu.Unlock()
	close(f.done)
}

// mark stops f; the caller holds w.mu. It reports whether f was not
// stopped before.
func (f *inFlight) mark() bool {
	select {
	case <-f.stopped:
		return false
	default:
		close(f.stopped)
		return true
	}
}

// stop marks the starts that match and returns them; a start of an
// unknown project is marked once its project is known to be stopped.
func (w *startWindow) stop(sessionID string, projectID int64) []*inFlight {
	w.mu.Lock()
	defer w.mu.Unlock()
	var marked []*inFlight
	for _, f := range w.m {
		switch {
		case sessionID != "" && f.sessionID != sessionID:
		case projectID != 0 && f.projectID == 0:
			f.projectStops = append(f.projectStops, projectID)
		case projectID != 0 && f.projectID != projectID:
		default:
			f.mark()
			marked = append(marked, f)
		}
	}
	return marked
}

// setProject notes the project of the session's start, which is stopped
// if its project was.
func (w *startWindow) setProject(sessionID string, projectID int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if f := w.m[sessionID]; f != nil {
		f.projectID = projectID
		if slices.Contains(f.projectStops, projectID) {
			f.mark()
		}
	}
}

// fence marks the session's start fenced; run is the run it put in the
// map, if it did already.
func (w *startWindow) fence(sessionID string) (run *Run, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f := w.m[sessionID]
	if f == nil {
		return nil, false
	}
	f.fenced = true
	f.mark()
	return f.run, true
}

// check is the error that ends the session's start, if it was stopped or
// fenced: errFenced, errStoppedWhileStarting.
func (w *startWindow) check(sessionID string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.checkLocked(sessionID)
}

func (w *startWindow) checkLocked(sessionID string) error {
	f := w.m[sessionID]
	if f == nil {
		return nil
	}
	if f.fenced {
		return errFenced
	}
	select {
	case <-f.stopped:
		return errStoppedWhileStarting
	default:
		return nil
	}
}

// stoppedOf is closed once the session's start is stopped or fenced; nil
// (never ready) when the session has no start in its window.
func (w *startWindow) stoppedOf(sessionID string) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if f := w.m[sessionID]; f != nil {
		return f.stopped
	}
	return nil
}

// launching notes that r goes live now, unless its start was stopped or
// fenced (its error); the caller holds s.mu and puts r in the map.
func (w *startWindow) launching(r *Run) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.checkLocked(r.spec.SessionID); err != nil {
		return err
	}
	if f := w.m[r.spec.SessionID]; f != nil {
		f.run = r
	}
	return nil
}

// Starting lists the sessions whose start is in its window: a lease
// check that fences live runs fences these too (Fence with run id 0).
func (s *Supervisor) Starting() []string {
	s.window.mu.Lock()
	defer s.window.mu.Unlock()
	ids := make([]string, 0, len(s.window.m))
	for id := range s.window.m {
		ids = append(ids, id)
	}
	return ids
}

// stopStarts marks the starts that match (stop) and waits until each has
// left its window.
func (s *Supervisor) stopStarts(sessionID string, projectID int64) {
	marked := s.window.stop(sessionID, projectID)
	for _, f := range marked {
		s.startPoint(f.sessionID, StartStopNoted)
	}
	for _, f := range marked {
		<-f.done
	}
}

// awaitLease returns once this replica surely holds its lease (at once
// without a lease check), or with the error that ends the session's
// start: stopped, fenced, or Parley stopping.
func (s *Supervisor) awaitLease(sessionID string) error {
	for s.leaseHeld != nil && !s.leaseHeld() {
		if err := s.window.check(sessionID); err != nil {
			return err
		}
		if s.isClosed() {
			return errClosed
		}
		select {
		case <-s.window.stoppedOf(sessionID):
		case <-time.After(leaseWait):
		}
	}
	return s.window.check(sessionID)
}

// readyToRecord is the check a start makes before it records its run: it
// was not stopped or fenced, and the lease is held.
func (s *Supervisor) readyToRecord(sessionID string) error {
	s.startPoint(sessionID, StartReady)
	return s.awaitLease(sessionID)
}

// endUnlaunched ends a start stopped or fenced after it recorded its run
// (err, launch's): kill ends its process; a stopped run is recorded ended,
// as a run stopped live is; a fenced one writes nothing to the session's
// log, and only closes its own run row (a takeover closed it already,
// unless the row came after it).
func (s *Supervisor) endUnlaunched(r *Run, kill func(), err error) {
	kill()
	if r.id == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, writeTimeout)
	defer cancel()
	const reason = "stopped by Parley (while it started)"
	if rerr := s.journal.RunEnded(ctx, r.id, -1, reason); rerr != nil {
		r.log.Error("record the end of a run stopped while it started", "err", rerr)
	}
	if errors.Is(err, errFenced) {
		return
	}
	r.recordJSON(ctx, TypeRunEnded, map[string]any{"exit_code": -1, "reason": reason, "status": StatusEnded})
	r.changeSession(ctx, SessionChange{Status: StatusEnded})
}
