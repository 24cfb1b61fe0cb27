package runner

import (
	"context"
)

// startWithSlot starts the session's process in a slot already granted (a
// queued session's turn came). A run that is live or being started
// meanwhile is used instead, and the slot given back.
func (s *Supervisor) startWithSlot(ctx context.Context, sessionID string, start Starter) (*Run, error) {
	for {
		s.mu.Lock()
		if r, ok := s.runs[sessionID]; ok {
			s.mu.Unlock()
			s.releaseSlot()
			return r, nil
		}
		wait, starting := s.starting[sessionID]
		if !starting {
			if s.closed {
				s.mu.Unlock()
				s.releaseSlot()
				return nil, errClosed
			}
			if s.draining {
				s.mu.Unlock()
				s.releaseSlot()
				return nil, ErrDraining
			}
			wait = make(chan struct{})
			s.starting[sessionID] = wait
			s.queueStarts[sessionID] = true
			s.mu.Unlock()
			return s.startNow(ctx, sessionID, start, wait, true)
		}
		s.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			s.releaseSlot()
			return nil, ctx.Err()
		}
	}
}

// ensure returns the session's live run or starts one with start's
// options; errNoSlot when every slot is taken, ErrStartHeld when the
// session's StartGuard is held elsewhere, errQueued when the session's
// earlier work is in the queue and not yet handed to its run (work from the
// line itself goes on).
// s.mu is never held across the database or the process start: a session
// being started is marked in s.starting, and a second caller waits for it.
func (s *Supervisor) ensure(ctx context.Context, sessionID string, start Starter, fromQueue bool) (*Run, error) {
	for {
		s.mu.Lock()
		if !fromQueue && s.slots.isOpen(sessionID) {
			s.mu.Unlock()
			return nil, errQueued
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
			if !s.slots.tryAcquire() && !s.slotFromWarm() {
				s.mu.Unlock()
				return nil, errNoSlot
			}
			wait = make(chan struct{})
			s.starting[sessionID] = wait
			if fromQueue {
				s.queueStarts[sessionID] = true
			}
			s.mu.Unlock()
			return s.startNow(ctx, sessionID, start, wait, fromQueue)
		}
		queueStart := s.queueStarts[sessionID]
		s.mu.Unlock()
		if queueStart && !fromQueue {
			return nil, errQueued // its work joins the queue behind the start's
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
// caller has marked the session starting. A start for work in the queue
// (fromQueue) waits for the session's StartGuard; any other is refused
// with ErrStartHeld while the guard is held elsewhere.
func (s *Supervisor) startNow(ctx context.Context, sessionID string, start Starter, starting chan struct{}, fromQueue bool) (*Run, error) {
	var r *Run
	var release func()
	var err error
	if s.startGuard != nil {
		release, err = s.startGuard(ctx, sessionID, fromQueue)
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
		// The start's window (supervisor_window.go): a stop from here on
		// ends it. It is left after the run is live or the start failed.
		f := s.window.enter(sessionID)
		defer s.window.leave(f)
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
	delete(s.queueStarts, sessionID)
	s.mu.Unlock()
	close(starting)
	return r, err
}
