package server

import (
	"context"
	"net/http"
)

// errSessionArchived refuses a prompt to an archived session, on every
// surface that sends one (the page, MCP send_message, `parley mcp`).
var errSessionArchived = &httpError{http.StatusForbidden, "This session is archived: it can be read but not continued. Restore it from the project's history to go on, or start a new session."}

// refuseArchived refuses a turn for an archived session: archiving ended
// its process, and a prompt would start another. It reads the database,
// not the session the caller holds, which may predate the archive.
func (s *Server) refuseArchived(ctx context.Context, sessionID string) error {
	archived, err := s.st.SessionArchived(ctx, sessionID)
	if err != nil {
		return err
	}
	if archived {
		return errSessionArchived
	}
	return nil
}
