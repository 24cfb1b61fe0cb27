package launch

import (
	"context"
	"errors"
	"fmt"

	"parley/runner"
	"parley/store"
	"parley/worktree"

	"github.com/google/uuid"
)

// ErrNotWarmed says the project's runs are not started ahead now: it has
// reached its daily spending limit, so a new session would not start.
var ErrNotWarmed = errors.New("the project's runs are not started ahead")

// WarmOptions are the run options a new session of the project would get
// now, for a process started ahead (package warm) under sessionID and
// claudeID before the session has a row: the project's settings (a new
// session has none of its own), its workspace and its instructions and,
// for a git project, the session's worktree, made ahead when makeTree is
// set (the session's first start records it). base names the base branch
// and its commit ("" when the project is no git repository): a worktree
// made ahead is the session's only while the base has not moved. Under a
// spending limit it has the --max-budget-usd a new session's start gets
// now (applyWarmBudget); ErrNotWarmed when the project may not start one.
func (l *Launcher) WarmOptions(ctx context.Context, projectID int64, sessionID, claudeID string, makeTree bool) (o runner.Options, base string, err error) {
	p, err := l.st.GetProject(ctx, projectID)
	if err != nil {
		return o, "", err
	}
	workspace, err := SyncWorkspace(l.cfg.DataDir, p)
	if err != nil {
		return o, "", err
	}
	// As Options does, for a session with no options of its own.
	ask := l.cfg.AskUserEnabled && p.AskUserEnabled
	settings := WithSessionOptions(p.ProjectSettings, store.SessionOptions{})
	md, notice := workspaceInstructions(workspace)
	settings.AppendSystemPrompt = joinPrompt(settings.AppendSystemPrompt, md)
	o = runner.Options{
		Spec: runner.Spec{SessionID: sessionID, ProjectID: projectID, ClaudeSessionID: claudeID,
			Workspace: workspace, ConfigDir: l.ConfigDirOf(p), ExtraArgs: claudeArgs(settings, ask),
			Home: HomeDir(l.cfg.DataDir, p.ID), Instructions: settings.AppendSystemPrompt},
		AskTimeout: l.cfg.AskTimeout, PermissionTimeout: l.cfg.PermissionTimeout, IdleTimeout: l.cfg.IdleTimeout,
		ModelURL: l.cfg.ModelURL, MayPrompt: l.hooks.MayPrompt(projectID),
	}
	if notice != "" {
		o.Notices = append(o.Notices, notice)
	}
	if err := l.askOptions(ctx, &o, p, ask); err != nil {
		return o, "", err
	}
	if base, err = l.warmWorktree(ctx, p, &o, workspace, makeTree); err != nil {
		return o, "", err
	}
	if err := l.applyRunLimits(ctx, &o, projectID); err != nil {
		return o, "", err
	}
	// Last, as a start's spending limit is (applyLimits).
	if err := l.applyWarmBudget(ctx, &o, projectID); err != nil {
		return o, "", err
	}
	return o, base, nil
}

// FreshConversation gives the session a new CLI session id, not yet
// started, and returns it: for a cold start in place of a process started
// ahead under the old one, which may have written that conversation
// already (its prime) — the CLI refuses a --session-id in use.
func (l *Launcher) FreshConversation(ctx context.Context, sessionID string) (string, error) {
	id := uuid.NewString()
	if err := l.st.SetClaudeSessionID(ctx, sessionID, id); err != nil {
		return "", fmt.Errorf("a new conversation in place of the one started ahead: %w", err)
	}
	return id, nil
}

// warmWorktree points o at the session's worktree, made ahead when
// makeTree is set, for a git project; it returns "branch commit" of the
// base, or "" for a project that is no git repository.
func (l *Launcher) warmWorktree(ctx context.Context, p store.Project, o *runner.Options, workspace string, makeTree bool) (string, error) {
	git := l.hooks.Git(p)
	branch, ok := git.BaseBranch(ctx, workspace)
	if !ok {
		return "", nil
	}
	tip, err := git.Tip(ctx, workspace, branch)
	if err != nil {
		return "", err
	}
	dir := WorktreeDir(l.cfg.DataDir, p.ID, o.SessionID)
	o.Workspace, o.WritableDirs = dir, []string{workspace}
	if !makeTree {
		return branch + " " + tip, nil
	}
	created, err := git.Ensure(ctx, workspace, dir, BranchFor(o.SessionID), branch)
	if err != nil {
		return "", fmt.Errorf("create a worktree ahead: %w", err)
	}
	if err := writeClaudeMD(dir, p.Instructions); err != nil {
		return "", fmt.Errorf("worktree made ahead: %w", err)
	}
	if created {
		if err := worktree.MatchOwner(dir, workspace); err != nil {
			return "", fmt.Errorf("worktree made ahead: %w", err)
		}
	}
	return branch + " " + tip, nil
}

// WarmBase is "branch commit" of the project's base branch now, as
// WarmOptions gives it ("" for a project that is no git repository).
func (l *Launcher) WarmBase(ctx context.Context, projectID int64) (string, error) {
	p, err := l.st.GetProject(ctx, projectID)
	if err != nil {
		return "", err
	}
	git := l.hooks.Git(p)
	workspace := WorkspaceDir(l.cfg.DataDir, p)
	branch, ok := git.BaseBranch(ctx, workspace)
	if !ok {
		return "", nil
	}
	tip, err := git.Tip(ctx, workspace, branch)
	return branch + " " + tip, err
}

// DropWarmWorktree removes the worktree and branch made ahead for
// sessionID, which no session took (or whose base moved on since).
func (l *Launcher) DropWarmWorktree(ctx context.Context, projectID int64, sessionID string) error {
	p, err := l.st.GetProject(ctx, projectID)
	if err != nil {
		return err
	}
	git := l.hooks.Git(p)
	workspace := WorkspaceDir(l.cfg.DataDir, p)
	if _, ok := git.BaseBranch(ctx, workspace); !ok {
		return nil // no git: no worktree
	}
	return RemoveTree(ctx, git, workspace, WorktreeDir(l.cfg.DataDir, p.ID, sessionID), BranchFor(sessionID))
}

// RemoveTree removes the worktree dir of repo and deletes its branch: a
// warm worktree dropped, a session deleted, a start that lost its session.
func RemoveTree(ctx context.Context, git *worktree.Git, repo, dir, branch string) error {
	if err := git.Remove(ctx, repo, dir); err != nil {
		return err
	}
	return git.DeleteBranch(ctx, repo, branch)
}
