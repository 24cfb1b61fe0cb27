package worktree

import (
	"path/filepath"
	"testing"
)

// TestUploadsStayOutOfTheDiff: files a member attached, saved under
// .parley/uploads (package attach), are inputs for Claude, not the
// session's work: neither the diff nor a merge takes them.
func TestUploadsStayOutOfTheDiff(t *testing.T) {
	g, ctx := New(""), t.Context()
	r := repo(t)
	wt := filepath.Join(t.TempDir(), "worktrees", "s1")
	if _, err := g.Ensure(ctx, r, wt, "parley/s1", "main"); err != nil {
		t.Fatal(err)
	}
	write(t, wt, ".parley/uploads/20261127-090000-abc/notes.txt", "attached\n")
	d, err := g.Diff(ctx, wt, "main")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Files) != 0 {
		t.Errorf("the diff takes the uploads: %+v", d.Files)
	}
}
