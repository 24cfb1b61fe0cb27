package runner

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"
)

// Admission by CPU (issue 33, item 4; docs/instant.md). The slot cap
// (slots.go) counts live processes, which is a matter of memory; an idle
// live process costs no CPU, a streaming one or one running tools does. A
// prompt that would set one more session working while cpuLine.max are
// working already waits in the CPU line, its place shown on its page like
// the slot queue's, and is sent when a working session's turn ends or
// waits for a person. Answers never wait here: they are Parley's own work
// on a turn already admitted, and must reach the model at once.

// DefaultCPURuns is the default CPU budget: sessions that may be working
// (streaming or running tools) at once, 8 per core Go may use. Measured on
// 2 cores with the fake model (docs/performance.md, CPU admission), 16 kept
// asks and answers fast where 20 and more did not.
func DefaultCPURuns() int { return 8 * runtime.GOMAXPROCS(0) }

// cpuRecheck is how often the head of the CPU line looks again when no
// run's change of state has woken it (a run that ended, a drain).
const cpuRecheck = 250 * time.Millisecond

// cpuLine is the CPU budget and the line of prompts waiting for it.
type cpuLine struct {
	max int // 0 = no budget

	mu      sync.Mutex
	waiting []*cpuWaiter
	// serving are the waiters let through that are still handing their
	// prompts over, by session: later prompts of the session join theirs.
	serving map[string]*cpuWaiter
	// admitted are sessions let through whose run may not show its turn
	// working yet: they count until their prompt has been handed over.
	admitted map[string]int
}

// cpuWaiter is a session's prompts waiting for the CPU, in order.
type cpuWaiter struct {
	sessionID string
	start     Starter
	work      []QueuedWork  // appended under cpuLine.mu; each kept already
	admit     chan struct{} // closed when the budget lets it through
}

// cpuGate lets a prompt for the session through now (it reports true),
// or puts it in the CPU line and returns false: it is sent from there.
// A prompt that waits is kept in the queue store first (w.Item), so that
// a crash does not lose it and whoever sends it settles its item.
func (s *Supervisor) cpuGate(ctx context.Context, sessionID string, start Starter, w *QueuedWork) (bool, error) {
	c := s.cpu
	if c == nil || c.max <= 0 {
		return true, nil
	}
	c.mu.Lock()
	through := c.lineOf(sessionID) == nil && s.mayWorkLocked(sessionID)
	c.mu.Unlock()
	if through {
		return true, nil
	}
	if _, err := s.keepQueued(ctx, sessionID, w); err != nil {
		return false, fmt.Errorf("keep it in line for the CPU: %w", err)
	}
	c.mu.Lock()
	if cw := c.lineOf(sessionID); cw != nil { // behind its earlier prompts
		cw.work = append(cw.work, *w)
		c.mu.Unlock()
		return false, nil
	}
	if s.mayWorkLocked(sessionID) { // room came meanwhile
		c.mu.Unlock()
		return true, nil
	}
	cw := &cpuWaiter{sessionID: sessionID, start: start, work: []QueuedWork{*w}, admit: make(chan struct{})}
	c.waiting = append(c.waiting, cw)
	c.mu.Unlock()
	s.log.Info("waiting for CPU", "session_id", sessionID, "working_max", c.max)
	s.announceCPU(nil)
	s.wg.Add(1)
	go s.serveCPUWaiter(cw)
	return false, nil
}

// lineOf is the session's waiter in the CPU line or still handing its
// prompts over; nil if none. Called with cpuLine.mu held.
func (c *cpuLine) lineOf(sessionID string) *cpuWaiter {
	if cw := c.serving[sessionID]; cw != nil {
		return cw
	}
	for _, cw := range c.waiting {
		if cw.sessionID == sessionID {
			return cw
		}
	}
	return nil
}

// mayWorkLocked says whether a prompt for the session may go now, and if
// so counts it as admitted: the session works already (its prompt waits
// in its CLI behind its turn), or nobody waits and the budget has room.
// Called with cpuLine.mu held.
func (s *Supervisor) mayWorkLocked(sessionID string) bool {
	working, room := s.cpuRoom(sessionID)
	if working || (room && len(s.cpu.waiting) == 0) {
		s.cpu.admitted[sessionID]++
		return true
	}
	return false
}

// cpuDone says a prompt let through has been handed over (or failed).
func (s *Supervisor) cpuDone(sessionID string) {
	c := s.cpu
	if c == nil || c.max <= 0 {
		return
	}
	c.mu.Lock()
	if c.admitted[sessionID]--; c.admitted[sessionID] <= 0 {
		delete(c.admitted, sessionID)
	}
	c.mu.Unlock()
	s.cpuAdmit()
}

// cpuRoom says whether the session is working already (or was let
// through), and whether the budget has room for one more working session
// (always while draining: the drain hands work on). Called with
// cpuLine.mu held.
func (s *Supervisor) cpuRoom(sessionID string) (working, room bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for id, r := range s.runs {
		if r.activity.Load() == activityWorking || s.cpu.admitted[id] > 0 {
			working = working || id == sessionID
			n++
		}
	}
	for id := range s.cpu.admitted {
		if _, live := s.runs[id]; !live {
			working = working || id == sessionID
			n++ // its process is starting
		}
	}
	return working, n < s.cpu.max || s.draining || s.closed
}

// cpuAdmit lets the head of the CPU line through while the budget allows.
func (s *Supervisor) cpuAdmit() {
	c := s.cpu
	if c == nil || c.max <= 0 {
		return
	}
	before := s.cpuQueue()
	c.mu.Lock()
	admitted := false
	for len(c.waiting) > 0 {
		cw := c.waiting[0]
		if working, room := s.cpuRoom(cw.sessionID); !working && !room {
			break
		}
		c.waiting = c.waiting[1:]
		c.admitted[cw.sessionID]++
		if c.serving == nil {
			c.serving = map[string]*cpuWaiter{}
		}
		c.serving[cw.sessionID] = cw
		close(cw.admit)
		admitted = true
	}
	c.mu.Unlock()
	if admitted {
		s.announceCPU(before)
	}
}

// serveCPUWaiter waits until cw is let through, then sends its prompts
// as any prompt is sent (a slot, a start, the slot queue if need be).
func (s *Supervisor) serveCPUWaiter(cw *cpuWaiter) {
	defer s.wg.Done()
	tick := time.NewTicker(cpuRecheck)
	defer tick.Stop()
	for waiting := true; waiting; {
		select {
		case <-cw.admit:
			waiting = false
		case <-tick.C:
			s.cpuAdmit()
		case <-s.ctx.Done():
			return // kept in the queue store: sent on after a restart
		}
	}
	defer s.cpuDone(cw.sessionID)
	ctx, cancel := context.WithTimeout(s.ctx, guardWait+time.Minute)
	defer cancel()
	for i := 0; ; i++ {
		s.cpu.mu.Lock()
		if i >= len(cw.work) {
			if s.cpu.serving[cw.sessionID] == cw {
				delete(s.cpu.serving, cw.sessionID)
			}
			s.cpu.mu.Unlock()
			return
		}
		w := cw.work[i]
		s.cpu.mu.Unlock()
		if err := s.sendPrompt(ctx, cw.sessionID, cw.start, w); err != nil && !errors.Is(err, ErrDraining) {
			s.log.Error("send a prompt that waited for CPU", "session_id", cw.sessionID, "err", err)
		}
	}
}

// cpuQueue returns the sessions in the CPU line, first first.
func (s *Supervisor) cpuQueue() []string {
	if s.cpu == nil {
		return nil
	}
	s.cpu.mu.Lock()
	defer s.cpu.mu.Unlock()
	ids := make([]string, len(s.cpu.waiting))
	for i, w := range s.cpu.waiting {
		ids[i] = w.sessionID
	}
	return ids
}

// cpuPlace is the session's place in the CPU line and the line's length.
func (s *Supervisor) cpuPlace(sessionID string) (place, of int) {
	q := s.cpuQueue()
	for i, id := range q {
		if id == sessionID {
			return i + 1, len(q)
		}
	}
	return 0, len(q)
}

// announceCPU tells each page in the CPU line its place, and those of
// before no longer in it that they have left.
func (s *Supervisor) announceCPU(before []string) {
	if s.queueObs == nil {
		return
	}
	q := s.cpuQueue()
	in := make(map[string]bool, len(q))
	for i, id := range q {
		in[id] = true
		s.queueObs.QueueChanged(id, i+1, len(q), "")
	}
	for _, id := range before {
		if !in[id] {
			s.queueObs.QueueChanged(id, 0, len(q), "")
		}
	}
}

// runStateChanged is told when a run's activity changes: a drain may go
// on, and a session that stopped working frees CPU for the line.
func (s *Supervisor) runStateChanged() {
	s.kickDrain()
	s.cpuAdmit()
}
