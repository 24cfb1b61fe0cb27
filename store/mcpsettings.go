package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// MCPSettings are a project's options for Parley's MCP surface.
type MCPSettings struct {
	// MemberPermissionModes are the permission modes a member (not an
	// owner) may choose in create_session.
	MemberPermissionModes []string `db:"member_permission_modes"`
	// AskTransport is how the project's runs reach ask_user: "http"
	// (Parley's own endpoint, the default: no process per run) or "stdio"
	// (a `parley mcp-askuser` child per run).
	AskTransport string `db:"ask_transport"`
}

// DefaultMCPSettings are a project's MCP options until an owner saves some.
func DefaultMCPSettings() MCPSettings {
	return MCPSettings{MemberPermissionModes: []string{"default", "acceptEdits", "plan"}, AskTransport: "http"}
}

// ProjectMCPSettings returns the project's MCP options, or the defaults.
func (s *Store) ProjectMCPSettings(ctx context.Context, projectID int64) (MCPSettings, error) {
	rows, _ := s.pool.Query(ctx, `SELECT member_permission_modes, ask_transport
		FROM project_mcp_settings WHERE project_id = $1`, projectID)
	m, err := pgx.CollectOneRow(rows, pgx.RowToStructByName[MCPSettings])
	if errors.Is(err, pgx.ErrNoRows) {
		return DefaultMCPSettings(), nil
	}
	if err != nil {
		return MCPSettings{}, fmt.Errorf("mcp settings of project %d: %w", projectID, err)
	}
	return m, nil
}

// SetProjectMCPSettings stores the project's MCP options.
func (s *Store) SetProjectMCPSettings(ctx context.Context, projectID int64, m MCPSettings) error {
	_, err := s.pool.Exec(ctx, `
		INSERT INTO project_mcp_settings (project_id, member_permission_modes, ask_transport) VALUES ($1, $2, $3)
		ON CONFLICT (project_id) DO UPDATE SET member_permission_modes = $2, ask_transport = $3`,
		projectID, nonNil(m.MemberPermissionModes), m.AskTransport)
	if err != nil {
		return fmt.Errorf("set mcp settings of project %d: %w", projectID, err)
	}
	return nil
}

// SessionOptions are the Claude options a session was created with over
// MCP; zero values leave the project's.
type SessionOptions struct {
	Model           string   `json:"model,omitempty"`
	PermissionMode  string   `json:"permissionMode,omitempty"`
	AllowedTools    []string `json:"allowedTools,omitempty"`
	DisallowedTools []string `json:"disallowedTools,omitempty"`
	MaxTurns        int      `json:"maxTurns,omitempty"`
	SystemPrompt    string   `json:"systemPrompt,omitempty"`
}

// SetSessionOptions stores the session's own Claude options.
func (s *Store) SetSessionOptions(ctx context.Context, sessionID string, o SessionOptions) error {
	b, err := json.Marshal(o)
	if err != nil {
		return fmt.Errorf("session %s: options: %w", sessionID, err)
	}
	_, err = s.pool.Exec(ctx, `INSERT INTO session_options (session_id, options) VALUES ($1, $2)
		ON CONFLICT (session_id) DO UPDATE SET options = $2`, sessionID, b)
	if err != nil {
		return fmt.Errorf("session %s: set options: %w", sessionID, err)
	}
	return nil
}

// GetSessionOptions returns the session's own Claude options (zero if none).
func (s *Store) GetSessionOptions(ctx context.Context, sessionID string) (SessionOptions, error) {
	var b []byte
	err := s.pool.QueryRow(ctx, `SELECT options FROM session_options WHERE session_id = $1`, sessionID).Scan(&b)
	if errors.Is(err, pgx.ErrNoRows) {
		return SessionOptions{}, nil
	}
	if err != nil {
		return SessionOptions{}, fmt.Errorf("session %s: options: %w", sessionID, err)
	}
	var o SessionOptions
	if err := json.Unmarshal(b, &o); err != nil {
		return SessionOptions{}, fmt.Errorf("session %s: options: %w", sessionID, err)
	}
	return o, nil
}
