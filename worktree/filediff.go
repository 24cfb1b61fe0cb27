package worktree

import (
	"cmp"
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// FileDiff is one file's changes against the session's base.
type FileDiff struct {
	Stat      FileStat // zero when the file did not change
	Patch     string   // unified diff of the file, cut at maxPatch
	Truncated bool
}

// DiffFile is Diff for the one file path (relative to the worktree's top,
// as git names it): what it changed, committed or not, against the commit
// where the branch left base. The path is a literal pathspec (no glob, no
// ":(magic)"), so a name a run chose cannot widen it.
func (g *Git) DiffFile(ctx context.Context, dir, base, path string) (FileDiff, error) {
	mb, env, done, err := g.stage(ctx, dir, base)
	if err != nil {
		return FileDiff{}, err
	}
	defer done()
	env = append(env, "GIT_LITERAL_PATHSPECS=1")
	args := []string{"diff", "--no-ext-diff", "--no-textconv", "--cached", "--no-renames"}
	num, err := g.run(ctx, dir, env, slices.Concat(unquoted, args, []string{"--numstat", mb, "--", path})...)
	if err != nil {
		return FileDiff{}, err
	}
	var d FileDiff
	if files := parseNumstat(num); len(files) > 0 {
		d.Stat = files[0]
	} else {
		return d, nil
	}
	patch, err := g.run(ctx, dir, env, slices.Concat(unquoted, args, []string{"--no-color", mb, "--", path})...)
	if err != nil {
		return FileDiff{}, err
	}
	if len(patch) > maxPatch {
		patch, d.Truncated = patch[:maxPatch], true
	}
	d.Patch = patch
	return d, nil
}

// Changed lists the files the worktree at dir changed against base, as
// Diff does, without their patch.
func (g *Git) Changed(ctx context.Context, dir, base string) ([]FileStat, error) {
	mb, env, done, err := g.stage(ctx, dir, base)
	if err != nil {
		return nil, err
	}
	defer done()
	num, err := g.run(ctx, dir, env, slices.Concat(unquoted, []string{"diff", "--no-ext-diff", "--no-textconv", "--cached", "--no-renames", "--numstat", mb})...)
	if err != nil {
		return nil, err
	}
	return parseNumstat(num), nil
}

// stage puts the worktree at dir, as it is on disk, into a private index
// (as Diff does) and returns the commit where its branch left base, the
// environment naming that index, and a func that removes it.
func (g *Git) stage(ctx context.Context, dir, base string) (mb string, env []string, done func(), err error) {
	mb, err = g.run(ctx, dir, nil, "merge-base", base, "HEAD")
	if err != nil {
		return "", nil, nil, err
	}
	idx := filepath.Join(cmp.Or(g.scratch, os.TempDir()), "parley-index-"+rand.Text())
	done = func() { os.Remove(idx) }
	env = []string{"GIT_INDEX_FILE=" + idx}
	if _, err := g.run(ctx, dir, env, "read-tree", "HEAD"); err != nil {
		done()
		return "", nil, nil, err
	}
	if _, err := g.run(ctx, dir, env, "add", "-A"); err != nil {
		done()
		return "", nil, nil, err
	}
	return strings.TrimSpace(mb), env, done, nil
}

// unquoted makes git name a file with non-ASCII bytes as it is, not as
// "\303\251" in quotes, so a changed file's name matches its name on disk.
var unquoted = []string{"-c", "core.quotePath=false"}
