package runner

import "context"

// Recoverer brings a session's log up to date before a run of it starts:
// what the CLI's transcript holds and the log lost (Parley crashed, a write
// failed), and the end of a run that went with Parley (see package
// transcript). It is called when no process of the session runs.
type Recoverer interface {
	Recover(ctx context.Context, s Spec) error
}

// reconcile runs the Recoverer, if any, for a run about to start. A failure
// is logged, not fatal: the run starts on the log as it is.
func (s *Supervisor) reconcile(ctx context.Context, spec Spec) {
	if s.recoverer == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	if err := s.recoverer.Recover(ctx, spec); err != nil {
		s.log.Error("reconcile the session log with Claude's transcript", "session_id", spec.SessionID, "err", err)
	}
}
