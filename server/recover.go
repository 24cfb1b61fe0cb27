package server

import (
	"context"
	"fmt"

	"parley/runner"
	"parley/store"
	"parley/transcript"
)

// RecoverLost reconciles every session whose run went with a Parley that
// crashed (its log still shows the run as live, no run of it is open): the
// steps Claude's transcript holds and the log lacks are added, and the run
// is closed, so the page shows the whole reply and the session idle; a
// turn it cut off goes on (transcript.Reconciled.GoOn, kept in line). Call
// it at start, after the takeover of stopped replicas, and after each later
// takeover. It returns how many sessions it reconciled.
func (s *Server) RecoverLost(ctx context.Context, rec *transcript.Reconciler) (int, error) {
	ids, err := s.st.LostRunSessions(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, id := range ids {
		// Only the session's owner writes its log: another replica may
		// be starting a run of it (and reconciles it then itself).
		owner, err := s.st.AcquireLease(ctx, id)
		if err != nil {
			return n, fmt.Errorf("recover session %s: %w", id, err)
		}
		if owner != s.st.Replica() {
			continue
		}
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
		res, err := rec.Reconcile(ctx, transcript.Session{ID: id, ProjectID: p.ID,
			ClaudeSessionID: sess.ClaudeSessionID, ConfigDir: s.configDirOf(p), Status: status,
			GoOn: true, MayPrompt: s.mayPrompt(p.ID)})
		if err != nil {
			return n, err
		}
		if w := res.GoOn; w != nil {
			// Released: this replica's next pass over the line (at start,
			// on a heartbeat, or on the session's next message) sends it
			// before anything sent after it.
			if _, err := s.st.KeepReleased(ctx, store.LineItem{SessionID: id, Kind: store.LinePrompt,
				Text: w.Text, By: w.By, ByID: w.ByID}); err != nil {
				return n, fmt.Errorf("recover session %s: %w", id, err)
			}
			s.log.Info("a crash cut a turn off: Claude is asked to go on", "session_id", id)
		}
		n++
	}
	return n, nil
}
