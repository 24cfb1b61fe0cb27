package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// ProjectSettings are the Claude options of a project's runs, edited on its
// settings page. Zero values mean "the CLI's or the server's default".
type ProjectSettings struct {
	Model              string   `db:"model"`
	PermissionMode     string   `db:"permission_mode"` // default, acceptEdits, plan, bypassPermissions
	AllowedTools       []string `db:"allowed_tools"`
	DisallowedTools    []string `db:"disallowed_tools"`
	AppendSystemPrompt string   `db:"append_system_prompt"`
	MaxTurns           int      `db:"max_turns"`           // 0 = no limit
	AskUserEnabled     bool     `db:"ask_user_enabled"`    // offer the ask_user tool
	AskTimeoutSeconds  int      `db:"ask_timeout_seconds"` // 0 = the server-wide default
	// PermissionTimeoutSeconds bounds permission, plan and AskUserQuestion
	// asks; 0 = they wait without a deadline.
	PermissionTimeoutSeconds int    `db:"permission_timeout_seconds"`
	Instructions             string `db:"instructions"` // the workspace's CLAUDE.md
}

// ProjectWithRole is a project as one user sees it in a list.
type ProjectWithRole struct {
	Project
	Role     string `db:"role"` // the user's role; "" for an admin who is not a member
	Sessions int    `db:"sessions"`
}

// CreateProject creates a project with default settings and, if ownerID is
// not 0, makes that user its owner.
func (s *Store) CreateProject(ctx context.Context, name string, ownerID int64) (Project, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return Project{}, fmt.Errorf("create project: %w", err)
	}
	defer tx.Rollback(ctx)
	rows, _ := tx.Query(ctx, `INSERT INTO projects (name, workspace) VALUES ($1, '') RETURNING `+projectColumns, name)
	p, err := pgx.CollectOneRow(rows, pgx.RowToStructByName[Project])
	if err != nil {
		return Project{}, fmt.Errorf("create project %q: %w", name, err)
	}
	if ownerID != 0 {
		if _, err := tx.Exec(ctx, `INSERT INTO project_members (project_id, user_id, role) VALUES ($1, $2, 'owner')`,
			p.ID, ownerID); err != nil {
			return Project{}, fmt.Errorf("create project %q: owner: %w", name, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return Project{}, fmt.Errorf("create project %q: commit: %w", name, err)
	}
	return p, nil
}

// ListProjects returns every project, by name.
func (s *Store) ListProjects(ctx context.Context) ([]Project, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+projectColumns+` FROM projects ORDER BY lower(name), id`)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[Project])
	if err != nil {
		return nil, fmt.Errorf("list projects: %w", err)
	}
	return list, nil
}

// ProjectsFor lists the projects a user may see, by name, with the user's
// role: its memberships, or every project when all is set (an admin).
func (s *Store) ProjectsFor(ctx context.Context, userID int64, all bool) ([]ProjectWithRole, error) {
	rows, _ := s.pool.Query(ctx, `
		SELECT `+prefixed("p.", projectColumns)+`, coalesce(m.role, '') AS role,
			(SELECT count(*) FROM sessions s WHERE s.project_id = p.id) AS sessions
		FROM projects p
		LEFT JOIN project_members m ON m.project_id = p.id AND m.user_id = $1
		WHERE $2 OR m.user_id IS NOT NULL
		ORDER BY p.archived_at IS NOT NULL, lower(p.name), p.id`, userID, all)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[ProjectWithRole])
	if err != nil {
		return nil, fmt.Errorf("projects of user %d: %w", userID, err)
	}
	return list, nil
}

// ProjectIDsFor returns the ids of the projects a user may see: its
// memberships, or every project when all is set.
func (s *Store) ProjectIDsFor(ctx context.Context, userID int64, all bool) ([]int64, error) {
	rows, _ := s.pool.Query(ctx, `
		SELECT p.id FROM projects p
		WHERE $2 OR EXISTS (SELECT 1 FROM project_members m WHERE m.project_id = p.id AND m.user_id = $1)
		ORDER BY p.id`, userID, all)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("project ids of user %d: %w", userID, err)
	}
	return ids, nil
}

// RenameProject sets a project's name.
func (s *Store) RenameProject(ctx context.Context, id int64, name string) error {
	return s.updateProject(ctx, "rename", id, `UPDATE projects SET name = $2, updated_at = now() WHERE id = $1`, name)
}

// ArchiveProject archives a project (or restores it when archived is false).
func (s *Store) ArchiveProject(ctx context.Context, id int64, archived bool) error {
	return s.updateProject(ctx, "archive", id, `
		UPDATE projects SET archived_at = CASE WHEN $2 THEN coalesce(archived_at, now()) END, updated_at = now()
		WHERE id = $1`, archived)
}

// DeleteProject deletes a project with its sessions, events and asks.
func (s *Store) DeleteProject(ctx context.Context, id int64) error {
	return s.updateProject(ctx, "delete", id, `DELETE FROM projects WHERE id = $1`)
}

// UpdateProjectSettings stores a project's Claude options and workspace
// ("" = the managed directory).
func (s *Store) UpdateProjectSettings(ctx context.Context, id int64, c ProjectSettings, workspace string) error {
	return s.updateProject(ctx, "update settings", id, `
		UPDATE projects SET model = $2, permission_mode = $3, allowed_tools = $4, disallowed_tools = $5,
			append_system_prompt = $6, max_turns = $7, ask_user_enabled = $8, ask_timeout_seconds = $9,
			instructions = $10, workspace = $11, permission_timeout_seconds = $12, updated_at = now()
		WHERE id = $1`,
		c.Model, c.PermissionMode, nonNil(c.AllowedTools), nonNil(c.DisallowedTools), c.AppendSystemPrompt,
		c.MaxTurns, c.AskUserEnabled, c.AskTimeoutSeconds, c.Instructions, workspace, c.PermissionTimeoutSeconds)
}

// CreateSessionBy creates an idle session started by a user; by is the
// name shown for them.
func (s *Store) CreateSessionBy(ctx context.Context, projectID int64, title, by string, userID int64) (Session, error) {
	sess, err := s.CreateSession(ctx, projectID, title, by)
	if err != nil {
		return sess, err
	}
	if _, err := s.pool.Exec(ctx, `UPDATE sessions SET created_by_user_id = $2 WHERE id = $1`, sess.ID, userID); err != nil {
		return sess, fmt.Errorf("session %s: set creator: %w", sess.ID, err)
	}
	return sess, nil
}

func (s *Store) updateProject(ctx context.Context, op string, id int64, sql string, args ...any) error {
	tag, err := s.pool.Exec(ctx, sql, append([]any{id}, args...)...)
	if err != nil {
		return fmt.Errorf("project %d: %s: %w", id, op, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("project %d: %s: %w", id, op, ErrNotFound)
	}
	return nil
}

func nonNil(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}
