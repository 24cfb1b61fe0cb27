package server

import (
	"context"
	"fmt"

	"parley/runner"
	"parley/transcript"
)

// RecoverLost reconciles every session whose run went with a Parley that
// crashed (its log still shows the run as live, no run of it is open): the
// steps Claude's transcript holds and the log lacks are added, and the run
// is closed, so the page shows the whole reply and the session idle. Call
// it at start, after the takeover of stopped replicas, and after each later
// takeover. It returns how many sessions it reconciled.
func (s *Server) RecoverLost(ctx context.Context, rec *transcript.Reconciler) (int, error) {
	ids, err := s.st.LostRunSessions(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, id := range ids {
		sess, err := s.st.GetSession(ctx, id)
		if err != nil {
			return n, fmt.Errorf("recover session %s: %w", id, err)
		}
		p, err := s.st.GetProject(ctx, sess.ProjectID)
		if err != nil {
			return n, fmt.Errorf("recover session %s: %w", id, err)
		}
		status := sess.Status
		if status != "waiting" {
			status = runner.StatusEnded
		}
		if _, err := rec.Reconcile(ctx, transcript.Session{ID: id, ProjectID: p.ID,
			ClaudeSessionID: sess.ClaudeSessionID, ConfigDir: s.configDirOf(p), Status: status}); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
