package server

import (
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"time"

	"parley/launch"
	"parley/runner"
	"parley/store"
	"parley/worktree"
)

// Per-session worktrees. When a project's workspace is a git repository
// (its top directory, with a branch checked out), each session works in
// its own `git worktree` under <data dir>/projects/N/worktrees/<session>,
// on branch parley/<session> made from the checked-out branch at the
// session's first run and kept across resumes. Any other workspace is
// shared by the project's sessions, as before.

// gitOf is git for project p's repository and worktrees. The repository is
// the project's runs' to write (its config, hooks, attributes, the
// worktrees' .git files), so git runs as they do: as the project's uid or
// in its sandbox (s.tools), with a run's environment (no server secret),
// never with the server's own privileges.
func (s *Server) gitOf(p store.Project) *worktree.Git {
	repo, wts := launch.WorkspaceDir(s.cfg.DataDir, p), launch.WorktreesDir(s.cfg.DataDir, p.ID)
	env := append(runner.BaseEnv(os.Environ()), "HOME="+wts, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	var jail worktree.Jail
	if s.tools != nil {
		jail = func(cmd *exec.Cmd) error {
			return s.tools.ConfineTool(cmd, runner.Spec{ProjectID: p.ID, Workspace: repo, ConfigDir: launch.ConfigDir(s.cfg.DataDir, p.ID),
				WritableDirs: []string{wts}})
		}
	}
	return s.git.In(env, jail, wts)
}

// worktreeAction is a member's merge or discard of a session's worktree.
type worktreeAction func(ctx context.Context, git *worktree.Git, repo, dir string, wt store.SessionWorktree, c worktree.Commit) (store.SessionWorktree, string, error)

// handleWorktree runs act on the session's worktree, then shows the
// session page again with what happened. It refuses while Claude works in
// the session or waits for an answer; otherwise a live, idle process is
// ended first (the next message resumes it), and no run of the session
// starts on any replica until git is done (the session's worktree lock,
// store/worktree_lock.go; a message sent meanwhile is kept in line and
// starts the session once git is done: WorktreeStartGuard), so nothing
// writes into the worktree while git commits and merges it.
func (s *Server) handleWorktree(act worktreeAction) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sess, v, err := s.authorizeSession(r.Context(), r, r.PathValue("id"), actPrompt)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		p, err := s.st.GetProject(r.Context(), sess.ProjectID)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		release, sess, wt, err := s.holdWorktree(r.Context(), sess.ID)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		defer release()
		if err := s.stopForWorktree(r.Context(), sess.ID); err != nil {
			s.fail(w, r, err)
			return
		}
		repo, dir := launch.WorkspaceDir(s.cfg.DataDir, p), launch.WorktreeDir(s.cfg.DataDir, p.ID, sess.ID)
		c := worktree.Commit{Author: v.Name, Message: "Parley session: " + orText(sess.Title, sess.ID)}
		wt, done, err := act(r.Context(), s.gitOf(p), repo, dir, wt, c)
		if err != nil {
			s.renderSession(w, r, sess, worktreeFailure(err))
			return
		}
		if err := s.st.SetSessionWorktree(r.Context(), wt); err != nil {
			s.fail(w, r, err)
			return
		}
		s.record(r, worktreeEntry(sess, wt, done))
		http.Redirect(w, r, "/sessions/"+sess.ID+"?worktree="+done, http.StatusSeeOther)
	})
}

// WorktreeStartGuard is the runner's StartGuard: every start of a
// session's run holds the session's worktree lock shared, so none starts
// while a member merges or discards the worktree. A start for a page's
// message or answer does not wait for a merge (the runner keeps the work
// in line, and its start there waits): runner.ErrStartHeld.
func WorktreeStartGuard(st *store.Store) runner.StartGuard {
	return func(ctx context.Context, sessionID string, wait bool) (func(), error) {
		release, err := st.ShareWorktree(ctx, sessionID, wait)
		if errors.Is(err, store.ErrWorktreeBusy) {
			return nil, runner.ErrStartHeld
		}
		return release, err
	}
}

// worktreeYield says whether a merge or discard of the session's worktree
// waits for its lock, on any replica: a start ahead of any message that
// holds the lock shared while it primes then gives way, ending its process
// (runner.Supervisor.SetAheadYield). Nobody waits on that start; the merge
// would otherwise wait for its prime and then be refused.
func worktreeYield(st *store.Store) func(ctx context.Context, sessionID string) bool {
	return func(ctx context.Context, sessionID string) bool {
		wanted, err := st.WorktreeWanted(ctx, sessionID)
		return err == nil && wanted
	}
}

// holdWorktree takes the session's worktree lock: no run of the session
// starts on any replica until release. A run being started meanwhile is
// waited for, and the merge is then refused (a message started it; its
// turn is not cut short), as it is while Claude works or waits; a start
// ahead of any message (a page opened) gives way instead, while it primes
// (worktreeYield), and records no run. The session and its worktree are
// read once the lock is held (as a merge before this one left them).
func (s *Server) holdWorktree(ctx context.Context, sessionID string) (release func(), sess store.Session, wt store.SessionWorktree, err error) {
	before, err := s.st.OpenRun(ctx, sessionID)
	if err != nil {
		return nil, sess, wt, err
	}
	release, err = s.st.LockWorktree(ctx, sessionID)
	if err != nil {
		return nil, sess, wt, err
	}
	after, err := s.st.OpenRun(ctx, sessionID)
	if err == nil {
		sess, err = s.st.GetSession(ctx, sessionID)
	}
	if err == nil {
		wt, err = s.st.SessionWorktree(ctx, sessionID)
	}
	switch {
	case err != nil:
	case wt.Branch == "":
		err = badRequest("This session has no branch of its own: its project's workspace is not a git repository, or it has not run yet.")
	case after != 0 && after != before, sess.Status == "running", sess.Status == "waiting":
		err = errWorktreeBusy
	}
	if err != nil {
		release()
		return nil, sess, wt, err
	}
	return release, sess, wt, nil
}

// errWorktreeBusy refuses a merge or discard while Claude works.
var errWorktreeBusy = &httpError{http.StatusConflict, "Claude is working in this session or waiting for an answer: stop it or let the turn end, then try again."}

// worktreeStopWait bounds the wait for a session's process to end before
// its worktree is merged or discarded.
const worktreeStopWait = 15 * time.Second

// stopForWorktree ends the session's idle process on whichever replica
// runs it and waits until the log shows no run of it open, so that no
// claude writes into the worktree while git commits, merges or removes it.
func (s *Server) stopForWorktree(ctx context.Context, sessionID string) error {
	s.stops.StopRun(ctx, sessionID)
	wctx, cancel := context.WithTimeout(ctx, worktreeStopWait)
	defer cancel()
	for {
		open, err := s.st.HasOpenRun(wctx, sessionID)
		if err != nil && wctx.Err() == nil {
			return err
		}
		if err == nil && !open {
			return nil
		}
		select {
		case <-wctx.Done():
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return &httpError{http.StatusConflict, "Claude's process for this session did not end in time; try again in a moment."}
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// mergeWorktree merges the session's branch into its base.
func (s *Server) mergeWorktree(ctx context.Context, git *worktree.Git, repo, dir string, wt store.SessionWorktree, c worktree.Commit) (store.SessionWorktree, string, error) {
	merged, err := git.Merge(ctx, repo, dir, wt.Branch, wt.Base, c)
	if err != nil {
		return wt, "", err
	}
	wt.State = store.WorktreeMerged
	if !merged {
		return wt, "uptodate", nil
	}
	return wt, "merged", nil
}

// discardWorktree removes the session's worktree and keeps its branch.
func (s *Server) discardWorktree(ctx context.Context, git *worktree.Git, repo, dir string, wt store.SessionWorktree, c worktree.Commit) (store.SessionWorktree, string, error) {
	c.Message = "Parley: work of a discarded session, " + c.Message
	if err := git.Discard(ctx, repo, dir, c); err != nil {
		return wt, "", err
	}
	wt.State = store.WorktreeDiscarded
	return wt, "discarded", nil
}

// worktreeFailure is what the page says about a merge or discard that
// did not happen.
func worktreeFailure(err error) pageNote {
	var c *worktree.ConflictError
	var g *worktree.Error
	switch {
	case errors.As(err, &c):
		return pageNote{Error: "Not merged: the session's branch and the base branch both changed the same lines. Nothing was changed; " +
			"resolve the conflict (for example ask Claude to merge the base branch into the session), then merge again.", Files: c.Files}
	case errors.Is(err, worktree.ErrNotOnBase):
		return pageNote{Error: "Not merged: " + err.Error() + ". Check out the base branch in the project's workspace, then merge again."}
	case errors.As(err, &g):
		return pageNote{Error: "Git refused: " + g.Stderr + " Nothing was changed."}
	}
	return pageNote{Error: "That did not work: " + err.Error()}
}

// removeWorktrees deletes the worktrees and branches of a project's
// sessions, when the project is deleted.
func (s *Server) removeWorktrees(ctx context.Context, p store.Project) {
	list, err := s.st.ProjectWorktrees(ctx, p.ID)
	if err != nil {
		s.log.Warn("list worktrees of a deleted project", "project_id", p.ID, "err", err)
		return
	}
	repo, git := launch.WorkspaceDir(s.cfg.DataDir, p), s.gitOf(p)
	for _, wt := range list {
		err := git.Remove(ctx, repo, launch.WorktreeDir(s.cfg.DataDir, p.ID, wt.SessionID))
		if err == nil {
			err = git.DeleteBranch(ctx, repo, wt.Branch)
		}
		if err != nil {
			s.log.Warn("remove a session's worktree", "session_id", wt.SessionID, "branch", wt.Branch, "err", err)
		}
	}
}

func orText(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
