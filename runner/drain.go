package runner

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"
)

// ErrDraining refuses to start a process on a replica that is shutting
// down: the work belongs on another replica.
var ErrDraining = errors.New("this Parley replica is shutting down")

// What a run is doing, as a drain sees it.
const (
	activityQuiet   = iota // no turn, no ask the process waits for
	activityAsking         // its turn waits only for asks: nothing will finish on its own
	activityWorking        // a turn is in flight
)

// Handover is a session a draining replica gives to another: its process
// had work, or it waited in the queue with Work (prompts and answers, in the
// order they were given).
type Handover struct {
	SessionID string
	Work      []QueuedWork
}

// drain is the supervisor's part of a graceful shutdown.
type drain struct {
	draining bool          // under Supervisor.mu: no new process starts
	kick     chan struct{} // a run's activity changed (buffered, 1)
	// left are sessions whose slot came just as the drain began: their
	// process did not start here (under Supervisor.mu).
	left []Handover
}

// leftOver hands a session that was given a slot as the drain began over
// with the others.
func (s *Supervisor) leftOver(h Handover) {
	s.mu.Lock()
	s.left = append(s.left, h)
	s.mu.Unlock()
}

// currentActivity is what the run is doing; it runs on the loop.
func (r *Run) currentActivity() int32 {
	switch {
	case r.stopping:
		return activityQuiet
	case r.attachedAsks() > 0:
		return activityAsking
	case r.turns > 0:
		return activityWorking
	}
	return activityQuiet
}

// noteActivity publishes what the run is doing; it runs on the loop.
func (r *Run) noteActivity() {
	a := r.currentActivity()
	if r.activity.Swap(a) != a && r.stateChanged != nil {
		r.stateChanged()
	}
}

// endForDrain ends the run from its loop and returns what it was doing
// then: from that moment the loop refuses turns and answers (ErrRunEnded),
// so one sent meanwhile goes to the session's next owner, never to a
// process about to be killed. keep keeps the prompt that goes on with
// what the drain cut off (goOn) before anything else can reach the session.
func (r *Run) endForDrain(ctx context.Context, keep func(*QueuedWork)) drainReply {
	reply := make(chan drainReply, 1)
	if err := r.send(ctx, drainCmd{reply: reply, keep: keep}, nil); err != nil {
		return drainReply{} // it ended on its own
	}
	select {
	case a := <-reply:
		return a
	case <-r.done:
		return drainReply{}
	case <-ctx.Done():
		return drainReply{}
	}
}

// handleBuffered handles the output already read from the process.
func (r *Run) handleBuffered(ctx context.Context) {
	for len(r.lines) > 0 {
		l, ok := <-r.lines
		if !ok || r.handleLines(ctx, l, r.lines) {
			return
		}
	}
}

// kickDrain wakes a Drain waiting for turns to finish; it never blocks.
func (s *Supervisor) kickDrain() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Drain is a graceful shutdown's first half: no new process starts here
// from now on (ErrDraining), and no work joins the queue; sessions given a
// slot just before get up to servingWait to hand their work to their
// process; then turns in flight get up to grace to finish; then every run
// ends. It returns the sessions whose runs still had work (a turn in
// flight, or an ask the process waited for): they should be taken over by
// another replica at once. The others were idle and resume on their next
// message. Sessions waiting in the queue for a slot are returned
// too, with the prompts and answers that waited there, in order: the new
// owner must be given them (a Handover's Work); nothing of them ran here.
func (s *Supervisor) Drain(ctx context.Context, grace time.Duration) (handOver []Handover) {
	s.BeginDrain(ctx)
	// The queue goes first: a slot that frees up from now on starts nothing.
	queued := s.dropQueue()
	s.waitServing(ctx)
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
wait:
	for s.anyActivity(activityWorking) {
		select {
		case <-s.kick:
		case <-deadline.C:
			break wait
		case <-ctx.Done():
			break wait
		}
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, r := range s.liveRuns() {
		wg.Go(func() {
			keep := func(w *QueuedWork) { s.keepGoOn(ctx, r.spec.SessionID, w) }
			if a := r.endForDrain(ctx, keep); a.activity != activityQuiet {
				h := Handover{SessionID: r.spec.SessionID}
				if a.goOn != nil {
					h.Work = []QueuedWork{*a.goOn}
				}
				mu.Lock()
				handOver = append(handOver, h)
				mu.Unlock()
				r.log.Info("handing the session over to another replica", "turn_in_flight", a.activity == activityWorking,
					"goes_on", a.goOn != nil)
			}
			r.Stop()
		})
	}
	wg.Wait()
	s.mu.Lock()
	left := s.left
	s.left = nil
	s.mu.Unlock()
	return slices.Concat(handOver, queued, left)
}

// servingWait bounds how long a drain waits for sessions given a slot
// just before it to hand their work to their process (in the time a drain
// is given beyond grace).
const servingWait = 10 * time.Second

// waitServing waits until every session given a slot has handed its
// prompts and answers to its process (a turn in flight, which the drain
// then treats like any other) or given them up to the drain (left): a
// slot that came free just before the drain loses nothing.
func (s *Supervisor) waitServing(ctx context.Context) {
	timeout := time.NewTimer(servingWait)
	defer timeout.Stop()
	for s.slots.servingNow() > 0 {
		select {
		case <-s.kick:
		case <-timeout.C:
			s.log.Warn("draining: sessions given a slot are still starting", "sessions", s.slots.servingNow())
			return
		case <-ctx.Done():
			return
		}
	}
}

// BeginDrain refuses every new process from now on (ErrDraining) and
// returns once the starts in progress have ended; Drain calls it too.
func (s *Supervisor) BeginDrain(ctx context.Context) {
	s.mu.Lock()
	s.draining = true
	starting := make([]chan struct{}, 0, len(s.starting))
	for _, c := range s.starting {
		starting = append(starting, c)
	}
	s.mu.Unlock()
	for _, c := range starting { // a start in progress lands in s.runs
		select {
		case <-c:
		case <-ctx.Done():
		}
	}
}

// Draining says a graceful shutdown has begun: no process starts here.
func (s *Supervisor) Draining() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.draining
}

// Sessions lists the sessions with a live run here.
func (s *Supervisor) Sessions() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, 0, len(s.runs))
	for id := range s.runs {
		ids = append(ids, id)
	}
	return ids
}

func (s *Supervisor) liveRuns() []*Run {
	s.mu.Lock()
	defer s.mu.Unlock()
	runs := make([]*Run, 0, len(s.runs))
	for _, r := range s.runs {
		runs = append(runs, r)
	}
	return runs
}

func (s *Supervisor) anyActivity(a int32) bool {
	for _, r := range s.liveRuns() {
		if r.activity.Load() == a {
			return true
		}
	}
	return false
}

// dropQueue empties the queue for slots and returns its sessions with the
// prompts and answers that waited there.
func (s *Supervisor) dropQueue() []Handover {
	s.slots.mu.Lock()
	queue := s.slots.waiting
	s.slots.waiting = nil
	s.slots.closed = true // work that comes now is refused (ErrDraining): it goes elsewhere
	hs := make([]Handover, 0, len(queue))
	for _, w := range queue {
		w.dropped = true
		close(w.granted) // its goroutine sees dropped and ends
		hs = append(hs, Handover{SessionID: w.sessionID, Work: work(w.jobs)})
	}
	s.slots.mu.Unlock()
	if s.queueObs != nil {
		for _, h := range hs {
			s.queueObs.QueueChanged(h.SessionID, 0, 0, "")
		}
	}
	return hs
}

// Resume starts the session's process (--resume when the session has a
// conversation) with no turn, for a session another replica handed over;
// it does nothing when the session already has a process here.
func (s *Supervisor) Resume(ctx context.Context, sessionID string, start Starter) error {
	_, err := s.ensure(ctx, sessionID, start, false)
	if waitsInQueue(err) {
		return s.enqueue(ctx, sessionID, start, job{do: nothing}, false)
	}
	return err
}
