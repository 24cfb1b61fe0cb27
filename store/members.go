package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Member is a user's membership of a project.
type Member struct {
	UserID int64  `db:"user_id"`
	Email  string `db:"email"`
	Name   string `db:"name"`
	Role   string `db:"role"` // owner, member or viewer
}

// SetMember adds a user to a project with role, or changes their role.
func (s *Store) SetMember(ctx context.Context, projectID, userID int64, role string) error {
	_, err := s.pool.Exec(ctx, `
		INSERT INTO project_members (project_id, user_id, role) VALUES ($1, $2, $3)
		ON CONFLICT (project_id, user_id) DO UPDATE SET role = excluded.role`, projectID, userID, role)
	if err != nil {
		return fmt.Errorf("project %d: set member %d as %s: %w", projectID, userID, role, err)
	}
	return nil
}

// RemoveMember takes a user out of a project.
func (s *Store) RemoveMember(ctx context.Context, projectID, userID int64) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM project_members WHERE project_id = $1 AND user_id = $2`, projectID, userID)
	if err != nil {
		return fmt.Errorf("project %d: remove member %d: %w", projectID, userID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("project %d: remove member %d: %w", projectID, userID, ErrNotFound)
	}
	return nil
}

// MemberRole returns a user's role in a project, or ErrNotFound.
func (s *Store) MemberRole(ctx context.Context, projectID, userID int64) (string, error) {
	var role string
	err := s.pool.QueryRow(ctx, `SELECT role FROM project_members WHERE project_id = $1 AND user_id = $2`,
		projectID, userID).Scan(&role)
	if err != nil {
		return "", fmt.Errorf("role of user %d in project %d: %w", userID, projectID, notFound(err))
	}
	return role, nil
}

// Members lists a project's members: owners first, then by email.
func (s *Store) Members(ctx context.Context, projectID int64) ([]Member, error) {
	rows, _ := s.pool.Query(ctx, `
		SELECT m.user_id, u.email, u.name, m.role
		FROM project_members m JOIN users u ON u.id = m.user_id
		WHERE m.project_id = $1
		ORDER BY array_position(ARRAY['owner', 'member', 'viewer'], m.role), lower(u.email)`, projectID)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[Member])
	if err != nil {
		return nil, fmt.Errorf("members of project %d: %w", projectID, err)
	}
	return list, nil
}

// Access is what a user may do in a project: their role ("" when not a
// member) and whether the project is archived.
type Access struct {
	Role     string `db:"role"`
	Archived bool   `db:"archived"`
}

// ProjectAccess returns a user's access to a project in one query, or
// ErrNotFound when the project does not exist.
func (s *Store) ProjectAccess(ctx context.Context, projectID, userID int64) (Access, error) {
	rows, _ := s.pool.Query(ctx, `
		SELECT coalesce(m.role, '') AS role, p.archived_at IS NOT NULL AS archived
		FROM projects p LEFT JOIN project_members m ON m.project_id = p.id AND m.user_id = $2
		WHERE p.id = $1`, projectID, userID)
	a, err := pgx.CollectOneRow(rows, pgx.RowToStructByName[Access])
	if err != nil {
		return Access{}, fmt.Errorf("access of user %d to project %d: %w", userID, projectID, notFound(err))
	}
	return a, nil
}
