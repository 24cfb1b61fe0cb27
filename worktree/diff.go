package worktree

import (
	"cmp"
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// maxPatch bounds the patch text a Diff carries for the page.
const maxPatch = 256 << 10

// FileStat is one changed file of a diff.
type FileStat struct {
	Path           string
	Added, Deleted int
	Binary         bool
}

// Diff is what a session's worktree changed against its base.
type Diff struct {
	Files          []FileStat
	Added, Deleted int
	Patch          string // unified diff, cut at maxPatch
	Truncated      bool   // Patch was cut
}

// Diff compares the worktree at dir, as it is on disk (committed or not,
// new files included), with the commit where its branch left base. It
// stages into a private index, so the session's own index is untouched.
func (g *Git) Diff(ctx context.Context, dir, base string) (Diff, error) {
	mb, err := g.run(ctx, dir, nil, "merge-base", base, "HEAD")
	if err != nil {
		return Diff{}, err
	}
	mb = strings.TrimSpace(mb)
	// A name only: git, as the project's, makes the file (read-tree).
	idx := filepath.Join(cmp.Or(g.scratch, os.TempDir()), "parley-index-"+rand.Text())
	defer os.Remove(idx)
	env := []string{"GIT_INDEX_FILE=" + idx}
	if _, err := g.run(ctx, dir, env, "read-tree", "HEAD"); err != nil {
		return Diff{}, err
	}
	if _, err := g.run(ctx, dir, env, "add", "-A"); err != nil {
		return Diff{}, err
	}
	num, err := g.run(ctx, dir, env, "diff", "--no-ext-diff", "--no-textconv", "--cached", "--no-renames", "--numstat", mb)
	if err != nil {
		return Diff{}, err
	}
	d := Diff{Files: parseNumstat(num)}
	for _, f := range d.Files {
		d.Added += f.Added
		d.Deleted += f.Deleted
	}
	if len(d.Files) == 0 {
		return d, nil
	}
	patch, err := g.run(ctx, dir, env, "diff", "--no-ext-diff", "--no-textconv", "--cached", "--no-renames", "--no-color", mb)
	if err != nil {
		return Diff{}, err
	}
	if len(patch) > maxPatch {
		patch, d.Truncated = patch[:maxPatch], true
	}
	d.Patch = patch
	return d, nil
}

// parseNumstat reads `git diff --numstat`: "added<TAB>deleted<TAB>path",
// with "-" for both counts of a binary file.
func parseNumstat(out string) []FileStat {
	var files []FileStat
	for line := range strings.Lines(out) {
		parts := strings.SplitN(strings.TrimRight(line, "\n"), "\t", 3)
		if len(parts) != 3 {
			continue
		}
		f := FileStat{Path: parts[2], Binary: parts[0] == "-"}
		f.Added, _ = strconv.Atoi(parts[0])
		f.Deleted, _ = strconv.Atoi(parts[1])
		files = append(files, f)
	}
	return files
}
