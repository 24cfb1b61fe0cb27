package server

import (
	"context"

	"parley/store"
)

// createSession creates a session of the project by v: with the ids of a
// process started ahead for the project when one is ready (package warm)
// and the session has no Claude options of its own (own), so that its run
// adopts that process; else with fresh ids.
func (s *Server) createSession(ctx context.Context, projectID int64, title string, v viewer, own bool) (store.Session, error) {
	if s.warm != nil && !own {
		if ids, ok := s.warm.Take(projectID); ok {
			sess, err := s.st.CreateSessionWithIDs(ctx, projectID, ids.SessionID, ids.ClaudeSessionID, title, v.Name, v.ID)
			if err != nil {
				s.warm.Drop(ids.SessionID)
			}
			return sess, err
		}
	}
	return s.st.CreateSessionBy(ctx, projectID, title, v.Name, v.ID)
}
