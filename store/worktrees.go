package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Worktree states (sessions.worktree_state).
const (
	WorktreeActive    = "active"    // the session works in it
	WorktreeMerged    = "merged"    // its branch was merged into the base
	WorktreeDiscarded = "discarded" // the directory was removed; the branch is kept
)

// SessionWorktree is a session's git worktree. Branch is "" for a session
// that has none (a project that is not a git repository, or no run yet).
type SessionWorktree struct {
	SessionID string `db:"id"`
	Branch    string `db:"worktree_branch"`
	Base      string `db:"worktree_base"`
	State     string `db:"worktree_state"`
}

// SessionWorktree returns the session's worktree record, or ErrNotFound.
func (s *Store) SessionWorktree(ctx context.Context, sessionID string) (SessionWorktree, error) {
	rows, _ := s.pool.Query(ctx, `
		SELECT id, worktree_branch, worktree_base, worktree_state FROM sessions WHERE id = $1`, sessionID)
	w, err := pgx.CollectOneRow(rows, pgx.RowToStructByName[SessionWorktree])
	if err != nil {
		return SessionWorktree{}, fmt.Errorf("worktree of session %s: %w", sessionID, notFound(err))
	}
	return w, nil
}

// SetSessionWorktree records the session's worktree branch, base and state.
func (s *Store) SetSessionWorktree(ctx context.Context, w SessionWorktree) error {
	return s.updateSession(ctx, "set worktree", w.SessionID, `
		UPDATE sessions SET worktree_branch = $2, worktree_base = $3, worktree_state = $4, updated_at = now()
		WHERE id = $1`, w.Branch, w.Base, w.State)
}

// ProjectWorktrees lists the worktrees of the project's sessions that have one.
func (s *Store) ProjectWorktrees(ctx context.Context, projectID int64) ([]SessionWorktree, error) {
	rows, _ := s.pool.Query(ctx, `
		SELECT id, worktree_branch, worktree_base, worktree_state FROM sessions
		WHERE project_id = $1 AND worktree_branch <> '' ORDER BY created_at`, projectID)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[SessionWorktree])
	if err != nil {
		return nil, fmt.Errorf("worktrees of project %d: %w", projectID, err)
	}
	return list, nil
}
