package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ConflictError says a merge was refused because the branch and the base
// changed the same lines; nothing was changed.
type ConflictError struct {
	Files []string
}

func (e *ConflictError) Error() string {
	return "the session's branch conflicts with the base branch in " + strings.Join(e.Files, ", ")
}

// env names the member as the author and Parley as the committer.
func (c Commit) env() []string {
	return []string{"GIT_AUTHOR_NAME=" + orText(c.Author, "Parley"), "GIT_AUTHOR_EMAIL=parley@localhost",
		"GIT_COMMITTER_NAME=Parley", "GIT_COMMITTER_EMAIL=parley@localhost"}
}

// ErrNotOnBase says the repository has another branch checked out than
// the base a session's branch merges into.
var ErrNotOnBase = errors.New("the workspace has another branch checked out than the session's base")

// Commit is who a merge is made for and what it is called.
type Commit struct {
	Author  string // the member who merges
	Message string
}

// Merge commits whatever the worktree at dir holds that is not committed
// yet onto its branch, then merges branch into base, which must be checked
// out in repo. Conflicts are found first without touching any file
// (git merge-tree) and returned as a *ConflictError; a merge git refuses
// for another reason (local changes in the base's checkout) is aborted.
// merged is false when base already held everything of branch.
func (g *Git) Merge(ctx context.Context, repo, dir, branch, base string, c Commit) (merged bool, err error) {
	env := c.env()
	if _, err := os.Stat(dir); err == nil {
		if err := g.commitAll(ctx, dir, env, c.Message); err != nil {
			return false, err
		}
	}
	cur, err := g.run(ctx, repo, nil, "symbolic-ref", "--short", "-q", "HEAD")
	if err != nil || strings.TrimSpace(cur) != base {
		return false, fmt.Errorf("%w (%s is checked out, the base is %s)", ErrNotOnBase, strings.TrimSpace(cur), base)
	}
	if _, err := g.run(ctx, repo, nil, "merge-base", "--is-ancestor", branch, base); err == nil {
		return false, nil
	}
	// Exit 1 with the conflicted paths after the tree id; 0 is clean.
	out, err := g.run(ctx, repo, nil, "merge-tree", "--write-tree", "--name-only", "--no-messages", base, branch)
	if err != nil {
		if exitCode(err) == 1 {
			lines := strings.Split(strings.TrimSpace(out), "\n")
			return false, &ConflictError{Files: lines[1:]}
		}
		return false, err
	}
	// The message goes on stdin (runInput), which git merge does not read
	// (-F - is a file named "-" to it, 2.39): merge without committing,
	// then commit the merge with the message.
	_, err = g.run(ctx, repo, env, "merge", "--no-ff", "--no-commit", branch)
	if err == nil {
		_, err = g.runInput(ctx, repo, env, c.Message, "commit", "-q", "--no-verify", "-F", "-")
	}
	if err != nil {
		if _, statErr := os.Stat(filepath.Join(gitDir(ctx, g, repo), "MERGE_HEAD")); statErr == nil {
			_, _ = g.run(ctx, repo, nil, "merge", "--abort")
		}
		return false, err
	}
	return true, nil
}

// commitAll commits every change in the worktree at dir, if there is any.
func (g *Git) commitAll(ctx context.Context, dir string, env []string, msg string) error {
	if _, err := g.run(ctx, dir, nil, "add", "-A"); err != nil {
		return err
	}
	// diff --cached --quiet exits 1 when something is staged.
	if _, err := g.run(ctx, dir, nil, "diff", "--no-ext-diff", "--no-textconv", "--cached", "--quiet"); err == nil {
		return nil
	} else if exitCode(err) != 1 {
		return err
	}
	_, err := g.runInput(ctx, dir, env, msg, "commit", "-q", "--no-verify", "-F", "-")
	return err
}

func gitDir(ctx context.Context, g *Git, repo string) string {
	d, err := g.run(ctx, repo, nil, "rev-parse", "--path-format=absolute", "--git-dir")
	if err != nil {
		return filepath.Join(repo, ".git")
	}
	return strings.TrimSpace(d)
}

func orText(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Discard removes the worktree at dir after committing what it holds onto
// its branch, so nothing is lost: the branch stays until the session is
// deleted, and the next run checks it out again.
func (g *Git) Discard(ctx context.Context, repo, dir string, c Commit) error {
	if _, err := os.Stat(dir); err == nil {
		if err := g.commitAll(ctx, dir, c.env(), c.Message); err != nil {
			return err
		}
	}
	return g.Remove(ctx, repo, dir)
}
