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
			if isFromLine(ctx) {
				s.lineStarts[sessionID] = true
			}
			s.mu.Unlock()
			return s.startNow(ctx, sessionID, start, wait)
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
