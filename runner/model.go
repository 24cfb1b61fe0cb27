package runner

import "sync/atomic"

// Gateway issues each run's model credentials: a token for Parley's model
// gateway, valid until revoke is called, on behalf of the run's project and
// of whoever's turn is running (user).
type Gateway interface {
	Admit(projectID int64, sessionID string, user func() string) (token string, revoke func())
}

// admitModel points the run at the gateway with a token of its own, when
// the server has a gateway; it returns what ends the token.
func (s *Supervisor) admitModel(r *Run, o Options) (revoke func()) {
	if s.cfg.Gateway == nil || o.ModelURL == "" {
		return func() {}
	}
	token, revoke := s.cfg.Gateway.Admit(o.ProjectID, o.SessionID, r.turnUser)
	r.spec.ModelURL, r.spec.ModelToken = o.ModelURL, token
	return revoke
}

// turnBy is who sent the turn the process works on (the last one written).
type turnBy struct{ v atomic.Pointer[string] }

func (t *turnBy) set(by string) { t.v.Store(&by) }

// turnUser is the member whose turn is running, for per-user limits.
func (r *Run) turnUser() string {
	if p := r.by.v.Load(); p != nil {
		return *p
	}
	return ""
}

// LimitReached records in the session's live run, if it has one, that its
// model request was refused, with why: the page shows it as a notice.
func (s *Supervisor) LimitReached(sessionID, text string) {
	if r, ok := s.Live(sessionID); ok {
		r.post(noticeCmd{level: "error", text: text})
	}
}

// Spec is what the run was started with (its ask_user config file, its
// model token).
func (r *Run) Spec() Spec { return r.spec }

// Pid is the process id of the run's claude.
func (r *Run) Pid() int { return r.proc.cmd.Process.Pid }

// ID is the run's id in the journal (RunStarted; 0 if it was not recorded).
func (r *Run) ID() int64 { return r.id }
