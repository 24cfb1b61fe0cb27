package server

import (
	"context"
	"errors"
	"fmt"

	"parley/runner"
	"parley/store"
	"parley/transcript"
)

// RecoverLost reconciles every session whose run went with a Parley that
// crashed (its log still shows the run as live, no run of it is open): the
// steps Claude's transcript holds and the log lacks are added, and the run
// is closed, so the page shows the whole reply and the session idle; a
// turn it cut off goes on (transcript.Reconciled.GoOn, kept in line,
// released: the next pass over the line, this replica's or another's,
// sends it). Call it at start, after the takeover
// of stopped replicas, and after each later takeover. A session that
// cannot be reconciled now is left for the next call, or for its next
// run, which reconciles it first. It returns how many sessions it
// reconciled, and the errors of those it could not.
func (s *Server) RecoverLost(ctx context.Context, rec *transcript.Reconciler) (int, error) {
	runs, err := s.st.LostRuns(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, lr := range runs {
		if ctx.Err() != nil {
			return n, errors.Join(append(errs, ctx.Err())...)
		}
		ok, err := s.recoverLost(ctx, rec, lr)
		if err != nil {
			errs = append(errs, fmt.Errorf("recover session %s: %w", lr.SessionID, err))
		} else if ok {
			n++
		}
	}
	return n, errors.Join(errs...)
}

// recoverLost reconciles one lost run's session if this replica holds, or
// can take, its lease: only the session's owner writes its log, and
// another replica may be starting a run of it (which reconciles it then
// itself).
func (s *Server) recoverLost(ctx context.Context, rec *transcript.Reconciler, lr store.LostRun) (bool, error) {
	id := lr.SessionID
	owner, err := s.st.AcquireLease(ctx, id)
	if err != nil || owner != s.st.Replica() {
		return false, err
	}
	sess, err := s.st.GetSession(ctx, id)
	if err != nil {
		return false, err
	}
	p, err := s.st.GetProject(ctx, sess.ProjectID)
	if err != nil {
		return false, err
	}
	status := sess.Status
	if status != "waiting" {
		status = runner.StatusEnded
	}
	res, err := rec.Reconcile(ctx, transcript.Session{ID: id, ProjectID: p.ID,
		ClaudeSessionID: sess.ClaudeSessionID, ConfigDir: s.configDirOf(p), Status: status,
		GoOn: true, MayPrompt: s.mayPrompt(p.ID), LostRun: lr.StartSeq})
	if err != nil {
		return false, err
	}
	if res.GoOn != nil {
		s.log.Info("a crash cut a turn off: Claude is asked to go on", "session_id", id)
	}
	return true, nil
}
