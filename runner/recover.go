package runner

import (
	"context"
	"errors"
)

// Recoverer brings a session's log up to date before a run of it starts:
// what the CLI's transcript holds and the log lost (Parley crashed, a write
// failed), and the end of a run that went with Parley (see package
// transcript). It is called when no process of the session runs. It
// returns the prompt that goes on with the turns such a lost run cut off,
// kept in the queue as this replica's (w.Item), or nil: the run sends it before
// anything else.
type Recoverer interface {
	Recover(ctx context.Context, o Options) (*QueuedWork, error)
}

// reconcile runs the Recoverer, if any, for a run about to start. A failure
// is logged, not fatal: the run starts on the log as it is.
func (s *Supervisor) reconcile(ctx context.Context, o Options) *QueuedWork {
	if s.recoverer == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	w, err := s.recoverer.Recover(ctx, o)
	if err != nil {
		s.log.Error("reconcile the session log with Claude's transcript", "session_id", o.SessionID, "err", err)
	}
	return w
}

// goOnFirst sends a new run, as its first turn, the prompt that goes on
// with what a lost run of its session cut off (reconcile): Claude goes on
// with it, and reads the messages the lost run's CLI had queued, before
// the message the run was started for. Its author is checked first, as
// for any turn that waited. Sent, or refused for good, it leaves the queue;
// not sent for now (the run ended at once, or was fenced), it is released
// for the next pass over the queue.
func (s *Supervisor) goOnFirst(r *Run, w *QueuedWork) {
	ctx, cancel := context.WithTimeout(s.ctx, writeTimeout)
	defer cancel()
	reply := make(chan error, 1)
	err := r.send(ctx, turnCmd{text: w.Text, by: Author{Name: w.By, ID: w.ByID}, item: w.Item, parley: w.Parley, reply: reply}, reply)
	if err != nil && !errors.Is(err, ErrNotAllowed) { // not allowed: the page says so
		r.log.Error("send the prompt that goes on with a lost run's turns", "err", err)
	}
	if errors.Is(err, ErrRunEnded) {
		s.releaseQueued(w) // the session's next run sends it
		return
	}
	s.settleQueued(w, err)
}
