package server

import (
	"context"
	"errors"
	"net/http"

	"parley/launch"
	"parley/mcpapi"
	"parley/mcpsessions"
	"parley/store"
)

// MCPHandler is Parley's MCP server on /mcp: the tools of package mcpapi,
// served with the rules of the pages by package mcpsessions over the
// pages' own act.Service. ctx bounds its resource watchers.
func (s *Server) MCPHandler(ctx context.Context) http.Handler {
	disk := mcpsessions.Disk{
		ConfigDir: s.configDirOf,
		Workspace: func(p store.Project) string { return launch.WorkspaceDir(s.cfg.DataDir, p) },
	}
	b := mcpsessions.New(mcpActs{s.acts()}, s.st, s.hub, disk, s.log)
	return mcpapi.New(ctx, b, s.userByAPIToken, s.log).Handler()
}

// userByAPIToken is the token check of every /mcp request.
func (s *Server) userByAPIToken(ctx context.Context, token string) (mcpapi.User, error) {
	if token == "" || len(token) > 128 {
		return mcpapi.User{}, mcpapi.ErrBadToken
	}
	u, err := s.st.UserByAPIToken(ctx, tokenHash(token))
	if errors.Is(err, store.ErrNotFound) {
		return mcpapi.User{}, mcpapi.ErrBadToken
	}
	if err != nil {
		return mcpapi.User{}, err
	}
	return mcpapi.User{ID: u.ID, Name: u.DisplayName(), Admin: u.IsAdmin}, nil
}
