package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// QueueObserver hears where the sessions waiting for a free slot stand.
// It may be called with the supervisor's lock held, so it must be quick
// and must not call back into the supervisor.
type QueueObserver interface {
	// QueueChanged says the session is place-th in the queue of `of` (1 = next);
	// place 0 says it has left the queue: its process is starting, or, with
	// failure set, could not start.
	QueueChanged(sessionID string, place, of int, failure string)
}

// errNoSlot says every slot is taken: the work must wait in the queue.
var errNoSlot = errors.New("every claude slot is taken")

// errNotQueued says no earlier work of the session is in the queue to join.
var errNotQueued = errors.New("no earlier work of the session is in line")

// slots caps the live claude processes of a supervisor. A session that
// needs a process when none is free waits in the queue (first come, first
// served); a slot given back goes to the head of the queue.
type slots struct {
	max int // 0 = no cap

	mu      sync.Mutex
	used    int
	waiting []*waiter
	// serving counts the waiters given a slot that have not yet handed
	// their jobs to their run: a drain waits for them (drain.go).
	serving int
	// closed says a drain emptied the queue: nothing joins it any more.
	closed bool
	// open are the waiters given a slot that have not yet handed all their
	// jobs to their run, by session: work for the session joins theirs, in
	// order (a start for work in the queue may wait for the session's
	// StartGuard; a page's work must not pass it).
	open map[string]*waiter
}

// waiter is a session in the queue, with the work to do once its process runs.
type waiter struct {
	sessionID string
	start     Starter
	jobs      []job         // appended under slots.mu while in the queue or open
	dropped   bool          // a drain emptied the queue: do nothing
	served    bool          // it was given a slot: counted in slots.serving until it is done
	granted   chan struct{} // closed when a slot is handed to it
}

// job is one piece of a waiter's work: do, and for a prompt or an answer
// what it is, for a drain to move and to keep in the queue (nil for others).
type job struct {
	do   sendFunc
	work *QueuedWork
}

// sendFunc hands a job's work to the session's run r; item is the work's
// kept queue item (QueuedWork.Item), 0 when it has none.
type sendFunc func(ctx context.Context, r *Run, item int64) error

// nothing is the job of a start with no work: the run starts, and that is all.
func nothing(context.Context, *Run, int64) error { return nil }

// grant hands w a slot; called with slots.mu held.
func (q *slots) grant(w *waiter) {
	w.served = true
	q.serving++
	if q.open == nil {
		q.open = map[string]*waiter{}
	}
	if q.open[w.sessionID] == nil {
		q.open[w.sessionID] = w
	}
	close(w.granted)
}

// seal closes w to more work once its jobs are handed over (or its run
// failed to start): what is in w.jobs then is all of it, and w's
// goroutine alone reads it.
func (q *slots) seal(w *waiter) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.sealLocked(w)
}

// sealLocked is seal with slots.mu held.
func (q *slots) sealLocked(w *waiter) {
	if q.open[w.sessionID] == w {
		delete(q.open, w.sessionID)
	}
}

// job is w's i-th job; when it has no more, w is sealed.
func (q *slots) job(w *waiter, i int) (job, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if i < len(w.jobs) {
		return w.jobs[i], true
	}
	q.sealLocked(w)
	return job{}, false
}

// isOpen says whether a waiter of the session given a slot still takes
// work (it has not handed all its jobs to its run).
func (q *slots) isOpen(sessionID string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.open[sessionID] != nil
}

// jobsOf is a copy of w's jobs as they are now.
func (q *slots) jobsOf(w *waiter) []job {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(w.jobs)
}

// keepJobs replaces the first n of w's jobs with kept, and seals w when
// that leaves it none (it reports so).
func (q *slots) keepJobs(w *waiter, kept []job, n int) (empty bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	w.jobs = append(kept, w.jobs[n:]...)
	if len(w.jobs) == 0 {
		q.sealLocked(w)
	}
	return len(w.jobs) == 0
}

// doneServing says w has handed its jobs over (or given up).
func (q *slots) doneServing(w *waiter) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if w.served {
		w.served = false
		q.serving--
	}
}

// servingNow is how many waiters given a slot are still handing jobs over.
func (q *slots) servingNow() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.serving
}

// work lists the prompts and answers among jobs, in order.
func work(jobs []job) []QueuedWork {
	var ws []QueuedWork
	for _, j := range jobs {
		if j.work != nil {
			ws = append(ws, *j.work)
		}
	}
	return ws
}

// tryAcquire takes a free slot unless there is none or others wait for one.
func (q *slots) tryAcquire() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.max > 0 && (q.used >= q.max || len(q.waiting) > 0) {
		return false
	}
	q.used++
	return true
}

// release hands a slot to the head of the queue, or back to the pool.
func (q *slots) release() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.waiting) == 0 {
		q.used--
		return
	}
	w := q.waiting[0]
	q.waiting = q.waiting[1:]
	q.grant(w)
}

// enqueue puts job in the queue for sessionID: with the session's waiter when
// it is already in the queue or given a slot and still taking work (isNew
// false), else with a new one (with behind set: errNotQueued). work, when
// set, is the prompt or answer job delivers, for a drain to move.
func (q *slots) enqueue(sessionID string, start Starter, do sendFunc, work *QueuedWork, behind bool) (w *waiter, isNew bool, err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return nil, false, ErrDraining // the drain has taken the queue
	}
	j := job{do: do, work: work}
	if w := q.open[sessionID]; w != nil {
		w.jobs = append(w.jobs, j)
		return w, false, nil
	}
	for _, w := range q.waiting {
		if w.sessionID == sessionID {
			w.jobs = append(w.jobs, j)
			return w, false, nil
		}
	}
	if behind {
		return nil, false, errNotQueued
	}
	w = &waiter{sessionID: sessionID, start: start, jobs: []job{j}, granted: make(chan struct{})}
	if q.max <= 0 || (q.used < q.max && len(q.waiting) == 0) {
		q.used++ // a slot came free since tryAcquire
		q.grant(w)
		return w, true, nil
	}
	q.waiting = append(q.waiting, w)
	return w, true, nil
}

// line returns the sessions in the queue, first first.
func (q *slots) queue() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	ids := make([]string, len(q.waiting))
	for i, w := range q.waiting {
		ids[i] = w.sessionID
	}
	return ids
}

func (q *slots) queued() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.waiting)
}

// MaxRuns is the cap on live claude processes (0 = none).
func (s *Supervisor) MaxRuns() int { return s.slots.max }

// LiveRuns is how many claude processes hold a slot now.
func (s *Supervisor) LiveRuns() int {
	s.slots.mu.Lock()
	defer s.slots.mu.Unlock()
	return s.slots.used
}

// QueuePlace says where the session waits for a slot, or for the CPU
// (cpu.go): its place (1 = next) and the length of the queue; 0 when it is
// not waiting.
func (s *Supervisor) QueuePlace(sessionID string) (place, of int) {
	queue := s.slots.queue()
	for i, id := range queue {
		if id == sessionID {
			return i + 1, len(queue)
		}
	}
	if place, of := s.cpuPlace(sessionID); place > 0 {
		return place, of
	}
	return 0, len(queue)
}

// releaseSlot gives a run's slot back and tells every waiting page its new
// place.
func (s *Supervisor) releaseSlot() {
	before := s.slots.queue()
	s.slots.release()
	s.announce(before)
}

// announce tells the observer the place of every session in the queue, and that
// those of before no longer in it have left.
func (s *Supervisor) announce(before []string) {
	if s.queueObs == nil {
		return
	}
	queue := s.slots.queue()
	in := make(map[string]bool, len(queue))
	for i, id := range queue {
		in[id] = true
		s.queueObs.QueueChanged(id, i+1, len(queue), "")
	}
	for _, id := range before {
		if !in[id] {
			s.queueObs.QueueChanged(id, 0, len(queue), "")
		}
	}
}

// enqueue puts j in the queue for the session and returns at once: the page
// shows the session's place, and j runs once a slot is free. An idle run
// is asked to end so that one is. A copy of j's work is kept in the queue
// (QueueStore) and waits with it. With behind set, j only joins earlier
// work of the session in the queue: errNotQueued when there is none (any
// more), and j, kept, is for the caller to send.
func (s *Supervisor) enqueue(ctx context.Context, sessionID string, start Starter, j job, behind bool) error {
	s.mu.Lock()
	closed, draining := s.closed, s.draining
	s.mu.Unlock()
	if closed {
		return errClosed
	}
	if draining {
		return ErrDraining
	}
	var qw *QueuedWork
	if j.work != nil {
		w := *j.work // kept as it is now; the caller's stays unkept
		qw = &w
	}
	kept, err := s.keepQueued(ctx, sessionID, qw)
	if err != nil {
		return fmt.Errorf("keep it in line for a claude slot: %w", err)
	}
	w, isNew, err := s.slots.enqueue(sessionID, start, j.do, qw, behind)
	if errors.Is(err, errNotQueued) {
		// Not in line: the caller sends j itself, so the copy saved above
		// must not stay for a replay or a claim to send again. If it
		// cannot be removed, j goes with its item: its prompt event names
		// the item (store.ClaimQueue skips it) and withRun settles it.
		if kept {
			lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), queueWrite)
			_, lerr := s.kept.Left(lctx, qw.Item)
			cancel()
			if lerr != nil {
				s.log.Warn("remove a copy kept for the queue: it goes with the work", "session_id", sessionID, "line", qw.Item, "err", lerr)
				j.work.Item = qw.Item
			}
		}
		return err
	}
	if err != nil && kept {
		// Refused (the drain took the queue meanwhile): it goes elsewhere,
		// whole, unless the drain handed it over with its session already.
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), queueWrite)
		ours, lerr := s.kept.Left(lctx, qw.Item)
		cancel()
		if lerr != nil || !ours {
			return nil // it stays in the queue there, and is sent on from there
		}
	}
	if err != nil || !isNew {
		return err
	}
	select {
	case <-w.granted: // a slot came free meanwhile: no need to wait or reap
	default:
		s.log.Info("waiting for a free claude slot", "session_id", sessionID, "queued", s.slots.queued(), "max_runs", s.slots.max)
		s.announce(nil)
		s.reapIdle()
	}
	s.wg.Add(1)
	go s.serveWaiter(w)
	return nil
}

// guardWait bounds how long a start for work in the queue waits for the
// session's StartGuard: a merge or discard of its worktree (git's work).
const guardWait = 5 * time.Minute

// serveWaiter waits for w's slot, starts its process and does its jobs.
// Work a drain keeps from being done here is handed over with the rest.
func (s *Supervisor) serveWaiter(w *waiter) {
	defer s.wg.Done()
	defer s.kickDrain()
	defer s.slots.doneServing(w)
	select {
	case <-w.granted:
	case <-s.ctx.Done():
		return
	}
	s.slots.mu.Lock()
	dropped := w.dropped
	s.slots.mu.Unlock()
	if dropped {
		return
	}
	// Until every job of w is handed to its run, work for the session sent
	// meanwhile joins w (slots.open), in order; its start waits for the
	// session's StartGuard (a merge of its worktree), if need be.
	defer s.slots.seal(w)
	ctx, cancel := context.WithTimeout(s.ctx, time.Minute)
	defer cancel()
	log := s.log.With("session_id", w.sessionID)
	jobs := s.slots.jobsOf(w)
	if s.slots.keepJobs(w, s.claimedElsewhere(ctx, w.sessionID, jobs), len(jobs)) {
		s.releaseSlot()
		return
	}
	sctx, scancel := context.WithTimeout(s.ctx, guardWait+time.Minute)
	r, err := s.startWithSlot(sctx, w.sessionID, w.start)
	scancel()
	if err != nil {
		s.slots.seal(w) // w.jobs is all there is, and only read here
	}
	if errors.Is(err, ErrDraining) {
		s.leftOver(Handover{SessionID: w.sessionID, Work: work(w.jobs)})
		return
	}
	if err != nil {
		log.Error("start a queued session", "err", err)
		if s.queueObs != nil {
			s.queueObs.QueueChanged(w.sessionID, 0, s.slots.queued(), "Claude could not start: "+err.Error())
		}
		for _, j := range w.jobs { // the page said so: they leave the queue, unless a later try may work
			s.settleQueued(j.work, err)
		}
		return
	}
	// The jobs are handed over with a time of their own: the start may
	// have waited for a merge.
	cancel()
	ctx, cancel = context.WithTimeout(s.ctx, time.Minute)
	defer cancel()
	for i := 0; ; i++ {
		j, ok := s.slots.job(w, i) // none left: w is sealed
		if !ok {
			return
		}
		// A prompt names its kept item; work back in the queue is kept as it is.
		err := j.do(ctx, r, queuedItem(j.work))
		if errors.Is(err, ErrRunEnded) {
			// Tried once more, as work from the queue: withRun sees to its
			// kept item. The rest go the same way, in order: w takes no more.
			s.slots.seal(w)
			err = s.withRun(ctx, w.sessionID, w.start, j, true)
		} else {
			s.settleQueued(j.work, err)
		}
		if errors.Is(err, ErrDraining) {
			// Its run ended for another reason and no process starts here
			// any more: this and what follows go to the next owner.
			s.slots.seal(w)
			s.leftOver(Handover{SessionID: w.sessionID, Work: work(w.jobs[i:])})
			return
		}
		if err != nil {
			log.Error("queued work failed", "err", err)
		}
	}
}
