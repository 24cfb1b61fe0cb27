package runner

import (
	"context"
	"time"
)

// resumeToDeliver starts the session again at once (--resume) because its
// process died holding answers it never took: nothing else may start it
// soon, and the new run sends them first (Run.deliverOwed).
func (s *Supervisor) resumeToDeliver(o Options) {
	s.mu.Lock()
	closed := s.closed
	if !closed {
		s.wg.Add(1) // the ending run still holds its own count, so Wait has not returned
	}
	s.mu.Unlock()
	if closed {
		return
	}
	o.Resume, o.Notices = true, nil
	go func() {
		defer s.wg.Done()
		ctx, cancel := context.WithTimeout(s.ctx, time.Minute)
		defer cancel()
		log := s.log.With("session_id", o.SessionID)
		log.Info("resuming the session to deliver answers its process never took")
		if err := s.withRun(ctx, o.SessionID, With(o), job{do: nothing}, false); err != nil {
			log.Error("resume to deliver answers", "err", err)
		}
	}()
}

// DeliverOwed starts each of sessions whose answers are owed to Claude (a
// crash or a lost replica left them saved and undelivered), unless it is
// live already; its new run sends them first. start gives each session's
// options. It returns at once; errors are logged.
func (s *Supervisor) DeliverOwed(sessions []string, start func(sessionID string) Starter) {
	for _, id := range sessions {
		if _, live := s.Live(id); live {
			continue
		}
		s.mu.Lock()
		closed := s.closed
		if !closed {
			s.wg.Add(1)
		}
		s.mu.Unlock()
		if closed {
			return
		}
		go func() {
			defer s.wg.Done()
			ctx, cancel := context.WithTimeout(s.ctx, time.Minute)
			defer cancel()
			if err := s.withRun(ctx, id, start(id), job{do: nothing}, false); err != nil {
				s.log.Error("resume to deliver answers", "session_id", id, "err", err)
			}
		}()
	}
}
