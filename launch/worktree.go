package launch

import (
	"context"
	"fmt"

	"parley/store"
	"parley/worktree"
)

// BranchFor is a session's branch.
func BranchFor(sessionID string) string { return "parley/" + sessionID }

// sessionWorkspace is the directory a session's process works in, and the
// directories outside it the run must write: the session's worktree and
// its repository (which holds the worktree's .git data), or the shared
// workspace.
func (l *Launcher) sessionWorkspace(ctx context.Context, p store.Project, sess store.Session, workspace string) (string, []string, error) {
	git := l.hooks.Git(p)
	base, ok := git.BaseBranch(ctx, workspace)
	if !ok {
		return workspace, nil, nil
	}
	wt, err := l.st.SessionWorktree(ctx, sess.ID)
	if err != nil {
		return "", nil, err
	}
	if wt.Branch == "" {
		wt.Branch, wt.Base = BranchFor(sess.ID), base
	}
	dir := WorktreeDir(l.cfg.DataDir, p.ID, sess.ID)
	created, err := git.Ensure(ctx, workspace, dir, wt.Branch, wt.Base)
	if err != nil {
		return "", nil, fmt.Errorf("create the session's worktree: %w", err)
	}
	// The same CLAUDE.md as the shared workspace; the settings reach the
	// CLI as flags, wherever it works.
	if err := writeClaudeMD(dir, p.Instructions); err != nil {
		return "", nil, fmt.Errorf("worktree of session %s: %w", sess.ID, err)
	}
	if created {
		if err := worktree.MatchOwner(dir, workspace); err != nil {
			return "", nil, fmt.Errorf("worktree of session %s: %w", sess.ID, err)
		}
		l.log.Info("session worktree created", "session_id", sess.ID, "branch", wt.Branch, "base", wt.Base, "dir", dir)
	}
	if wt.State != store.WorktreeActive {
		wt.State = store.WorktreeActive
		if err := l.st.SetSessionWorktree(ctx, wt); err != nil {
			return "", nil, err
		}
	}
	return dir, []string{workspace}, nil
}
