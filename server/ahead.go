package server

import (
	"context"
	"sync/atomic"
	"time"

	"parley/runner"
	"parley/store"
)

// Resuming a session before its message (runner.Supervisor.ResumeAhead):
// when a member who may write opens a session whose process has ended, or
// types in its composer, the process starts then, so the message finds it
// live. Viewers, archived sessions and sessions over a limit start nothing.

// aheadEvery is how often one page may ask for a start ahead: the first
// hello and then typing at most this often.
const aheadEvery = 10 * time.Second

// aheadWait bounds one start ahead (a forward to the owning replica
// included).
const aheadWait = 60 * time.Second

// resumerAhead is what Runs offers when it can start a process ahead of a
// message (runner.Supervisor, cluster.Node).
type resumerAhead interface {
	ResumeAhead(ctx context.Context, sessionID string, start runner.Starter) error
}

// aheadClock keeps one page from asking more often than aheadEvery.
type aheadClock struct{ last atomic.Int64 }

// due reports whether a request for a start ahead may go now, and if so
// starts the next period.
func (a *aheadClock) due(now time.Time) bool {
	last := a.last.Load()
	if last != 0 && now.Sub(time.Unix(0, last)) < aheadEvery {
		return false
	}
	return a.last.CompareAndSwap(last, now.UnixNano())
}

// resumeAhead starts the session's process, in the background, when the
// page's user may prompt in it now and it has a conversation to resume
// (a session never started waits for its first message, or a warm
// process). It never fails the page: a refusal or an error is logged only.
func (c *wsConn) resumeAhead() {
	if !c.ahead.due(time.Now()) {
		return
	}
	ra, ok := c.s.runs.(resumerAhead)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.r.Context()), aheadWait)
	go func() {
		defer cancel()
		sess, err := c.s.aheadSession(ctx, c)
		if err != nil || sess == nil {
			if err != nil {
				c.s.log.Debug("no start ahead", "session_id", c.sess.ID, "err", err)
			}
			return
		}
		if err := ra.ResumeAhead(ctx, sess.ID, c.s.starter(*sess)); err != nil {
			c.s.log.Warn("start a session's process ahead of its message", "session_id", sess.ID, "err", err)
		}
	}()
}

// aheadSession is the page's session, read afresh, when its user may
// prompt in it now and it has a conversation to resume; nil otherwise.
func (s *Server) aheadSession(ctx context.Context, c *wsConn) (*store.Session, error) {
	a, err := s.actor(ctx, c.r)
	if err != nil {
		return nil, err
	}
	if _, err := s.checkAccess(ctx, viewerOfActor(a), c.sess.ProjectID, actPrompt); err != nil {
		return nil, err
	}
	sess, err := s.st.GetSession(ctx, c.sess.ID)
	if err != nil || !sess.ClaudeStarted {
		return nil, err
	}
	if err := s.refuseArchived(ctx, sess.ID); err != nil {
		return nil, err
	}
	// A start makes the session's worktree again and marks it active: a
	// worktree merged or discarded comes back only for a message, never
	// because someone looked at the page.
	if wt, err := s.st.SessionWorktree(ctx, sess.ID); err != nil || (wt.Branch != "" && wt.State != store.WorktreeActive) {
		return nil, err
	}
	if err := s.checkBudget(ctx, sess); err != nil {
		return nil, err
	}
	if err := s.checkDisk(ctx, sess.ProjectID); err != nil {
		return nil, err
	}
	return &sess, nil
}
