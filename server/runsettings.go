package server

import (
	"context"
	"slices"
	"strings"

	"parley/store"
)

// configDirOf is the CLAUDE_CONFIG_DIR of the project's runs.
func (s *Server) configDirOf(p store.Project) string {
	if s.cfg.ClaudeConfigDir != "" {
		return s.cfg.ClaudeConfigDir
	}
	return ConfigDir(s.cfg.DataDir, p.ID)
}

// withSessionOptions lays a session's own options over its project's: the
// tool lists grow, the rest replace.
func withSessionOptions(p store.ProjectSettings, o store.SessionOptions) store.ProjectSettings {
	if o.Model != "" {
		p.Model = o.Model
	}
	if o.PermissionMode != "" {
		p.PermissionMode = o.PermissionMode
	}
	p.AllowedTools = append(slices.Clone(p.AllowedTools), o.AllowedTools...)
	p.DisallowedTools = append(slices.Clone(p.DisallowedTools), o.DisallowedTools...)
	if o.MaxTurns > 0 {
		p.MaxTurns = o.MaxTurns
	}
	if o.SystemPrompt != "" {
		p.AppendSystemPrompt = strings.TrimSpace(p.AppendSystemPrompt + "\n\n" + o.SystemPrompt)
	}
	return p
}

// sessionSettings are the Claude options of a session's runs.
func (s *Server) sessionSettings(ctx context.Context, sess store.Session, p store.ProjectSettings) (store.ProjectSettings, error) {
	o, err := s.st.GetSessionOptions(ctx, sess.ID)
	if err != nil {
		return p, err
	}
	return withSessionOptions(p, o), nil
}

// askOverHTTP reports whether the project's runs reach ask_user at
// Parley's own streamable HTTP endpoint rather than a child process.
func (s *Server) askOverHTTP(ctx context.Context, projectID int64) (bool, error) {
	m, err := s.st.ProjectMCPSettings(ctx, projectID)
	return m.AskTransport == "http", err
}
