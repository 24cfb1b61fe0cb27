package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// SessionMode is a session's model and permission mode: as its log says
// them now (CurrentMode), or as a member switched them for its next start
// (SessionSwitches). "" = not known / not switched.
type SessionMode struct {
	Model string `json:"switchedModel,omitempty"`
	Mode  string `json:"switchedMode,omitempty"`
}

// CurrentMode reads the session's model and permission mode from its log:
// for each, the newest of a switch event, the CLI's system/init (model,
// permissionMode) or system/status (permissionMode).
func (s *Store) CurrentMode(ctx context.Context, sessionID string) (SessionMode, error) {
	rows, err := s.pool.Query(ctx, `SELECT type, payload FROM events
		WHERE session_id = $1 AND (type = 'switched' OR (type = 'system' AND payload->>'subtype' IN ('init', 'status')))
		ORDER BY seq DESC LIMIT 64`, sessionID)
	if err != nil {
		return SessionMode{}, fmt.Errorf("mode of session %s: %w", sessionID, err)
	}
	defer rows.Close()
	var m SessionMode
	for rows.Next() && (m.Model == "" || m.Mode == "") {
		var typ string
		var payload []byte
		if err := rows.Scan(&typ, &payload); err != nil {
			return SessionMode{}, fmt.Errorf("mode of session %s: %w", sessionID, err)
		}
		m.fill(typ, payload)
	}
	return m, rows.Err()
}

// fill takes from one event what m does not know yet.
func (m *SessionMode) fill(typ string, payload []byte) {
	var p struct {
		What, To, Model string
		PermissionMode  *string `json:"permissionMode"`
	}
	if json.Unmarshal(payload, &p) != nil {
		return
	}
	switch {
	case typ == "switched" && p.What == "model" && m.Model == "":
		m.Model = p.To
		if p.Model != "" {
			m.Model = p.Model
		}
	case typ == "switched" && p.What == "permission_mode" && m.Mode == "":
		m.Mode = p.To
	case typ == "system":
		if m.Model == "" {
			m.Model = p.Model
		}
		if m.Mode == "" && p.PermissionMode != nil {
			m.Mode = *p.PermissionMode
		}
	}
}

// SessionSwitches returns the model and permission mode members switched
// the session to, kept beside its options for its next start.
func (s *Store) SessionSwitches(ctx context.Context, sessionID string) (SessionMode, error) {
	var b []byte
	err := s.pool.QueryRow(ctx, `SELECT options FROM session_options WHERE session_id = $1`, sessionID).Scan(&b)
	if errors.Is(err, pgx.ErrNoRows) {
		return SessionMode{}, nil
	}
	if err != nil {
		return SessionMode{}, fmt.Errorf("session %s: switches: %w", sessionID, err)
	}
	var m SessionMode
	if err := json.Unmarshal(b, &m); err != nil {
		return SessionMode{}, fmt.Errorf("session %s: switches: %w", sessionID, err)
	}
	return m, nil
}

// SetSessionSwitch keeps the session's switched model (what "model") or
// permission mode (what "permission_mode") for its next start, beside the
// options it was created with.
func (s *Store) SetSessionSwitch(ctx context.Context, sessionID, what, value string) error {
	key := map[string]string{"model": "switchedModel", "permission_mode": "switchedMode"}[what]
	if key == "" {
		return fmt.Errorf("session %s: no switch %q", sessionID, what)
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO session_options (session_id, options) VALUES ($1, jsonb_build_object($2::text, $3::text))
		ON CONFLICT (session_id) DO UPDATE SET options = session_options.options || jsonb_build_object($2::text, $3::text)`,
		sessionID, key, value)
	if err != nil {
		return fmt.Errorf("session %s: keep switch: %w", sessionID, err)
	}
	return nil
}

// SlashCommands returns the names in the newest system/init event's
// slash_commands: the session's own, else one of its project's five
// latest sessions (a session that has not run yet offers what its
// project's CLI offers).
func (s *Store) SlashCommands(ctx context.Context, sessionID string, projectID int64) ([]string, error) {
	var b []byte
	err := s.pool.QueryRow(ctx, `
		SELECT e.payload->'slash_commands' FROM (
			SELECT id, created_at FROM sessions WHERE id = $1
			UNION ALL
			(SELECT id, created_at FROM sessions WHERE project_id = $2 AND id <> $1 ORDER BY created_at DESC LIMIT 5)
		) s
		JOIN LATERAL (SELECT payload FROM events WHERE session_id = s.id AND type = 'system'
			AND payload->>'subtype' = 'init' ORDER BY seq DESC LIMIT 1) e ON true
		ORDER BY (s.id = $1) DESC, s.created_at DESC LIMIT 1`, sessionID, projectID).Scan(&b)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("slash commands of session %s: %w", sessionID, err)
	}
	var names []string
	_ = json.Unmarshal(b, &names) // not a list of names: none
	return names, nil
}
