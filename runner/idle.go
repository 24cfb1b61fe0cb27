package runner

import (
	"sync/atomic"
	"time"
)

// reapIdle asks the run idle longest (no turn, no open ask) to end, so its
// slot goes to the queue.
func (s *Supervisor) reapIdle() {
	if s.yieldWarm() { // a process started ahead goes first
		return
	}
	s.mu.Lock()
	var oldest *Run
	for _, r := range s.runs {
		since := r.idleSince.Load()
		if since == 0 || r.reaping.Load() {
			continue
		}
		if oldest == nil || since < oldest.idleSince.Load() {
			oldest = r
		}
	}
	if oldest != nil {
		oldest.reaping.Store(true)
	}
	s.mu.Unlock()
	if oldest != nil {
		oldest.post(reapCmd{})
	}
}

// yieldSlot ends the run so that its slot goes to a waiting session; the
// session's next message resumes it with --resume.
func (r *Run) yieldSlot(why string) {
	r.stopping = true
	r.idleSince.Store(0)
	r.log.Info("ending idle claude process", "why", why)
	r.cancel()
}

// markIdle notes whether the run has nothing to do (no turn, no open ask,
// and it has done some work: a run just started for a waiting message is
// not idle). An idle run yields its slot at once when sessions wait.
func (r *Run) markIdle() {
	r.noteActivity()
	idle := r.worked && !r.stopping && r.turns == 0 && r.attachedAsks() == 0
	switch {
	case !idle:
		r.idleSince.Store(0)
	case r.othersWaiting != nil && r.othersWaiting():
		r.yieldSlot("sessions are waiting for a free slot")
	case r.idleSince.Load() == 0:
		r.idleSince.Store(time.Now().UnixNano())
	}
}

// idleState is the part of a Run the slot queue reads from other goroutines.
type idleState struct {
	idleSince     atomic.Int64 // unix nanoseconds since when the run is idle; 0 = busy
	reaping       atomic.Bool  // a reapCmd is on its way
	worked        bool         // owned by the loop: a turn or answer was handled
	othersWaiting func() bool  // sessions wait for a slot
	activity      atomic.Int32 // what the run is doing, for a drain (drain.go)
	stateChanged  func()       // told when activity changes; may be nil
}
