package launch

import (
	"context"
	"errors"
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
			if errors.Is(err, store.ErrNotFound) {
				// The session was deleted while git made its worktree, and
				// the delete found none to remove (a first run takes no
				// worktree lock): this start removes what it made.
				l.dropWorktree(ctx, git, workspace, dir, wt.Branch, sess.ID)
			}
			return "", nil, err
		}
	}
	return dir, []string{workspace}, nil
}

// dropWorktree removes a deleted session's worktree and branch, and logs
// what it did (or could not).
func (l *Launcher) dropWorktree(ctx context.Context, git *worktree.Git, repo, dir, branch, sessionID string) {
	err := RemoveTree(context.WithoutCancel(ctx), git, repo, dir, branch)
	l.log.Info("a deleted session's worktree, made as it was deleted, is removed", "session_id", sessionID, "branch", branch, "err", err)
}
