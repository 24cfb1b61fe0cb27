package worktree

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// DiffFile is one file's diff, its name a literal pathspec: a file named
// "*.txt" (or ":(glob)**") diffs that file alone; Changed names files as
// they are on disk, non-ASCII included; a deleted file has a diff too.
func TestDiffFile(t *testing.T) {
	g, ctx := New(""), t.Context()
	r := repo(t)
	wt := filepath.Join(t.TempDir(), "worktrees", "s1")
	if _, err := g.Ensure(ctx, r, wt, "parley/s1", "main"); err != nil {
		t.Fatal(err)
	}
	write(t, wt, "a.txt", "one\nTWO\nthree\n")
	write(t, wt, "*.txt", "star\n")
	write(t, wt, ":(glob)**", "magic\n")
	write(t, wt, "café.md", "crème\n")
	tests := []struct {
		path, has, hasNot string
	}{
		{"a.txt", "+TWO", "star"},
		{"*.txt", "+star", "TWO"},
		{":(glob)**", "+magic", "TWO"},
		{"café.md", "+crème", "TWO"},
	}
	for _, tt := range tests {
		d, err := g.DiffFile(ctx, wt, "main", tt.path)
		if err != nil {
			t.Fatalf("DiffFile(%q): %v", tt.path, err)
		}
		if !strings.Contains(d.Patch, tt.has) || strings.Contains(d.Patch, tt.hasNot) || d.Stat.Path != tt.path {
			t.Errorf("DiffFile(%q) = %+v:\n%s", tt.path, d.Stat, d.Patch)
		}
	}
	if d, err := g.DiffFile(ctx, wt, "main", "nothing.txt"); err != nil || d.Patch != "" {
		t.Errorf("DiffFile(nothing.txt) = %q, %v; want no diff", d.Patch, err)
	}
	files, err := g.Changed(ctx, wt, "main")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, f.Path)
	}
	if diff := cmp.Diff([]string{"*.txt", ":(glob)**", "a.txt", "café.md"}, names); diff != "" {
		t.Errorf("Changed (-want +got):\n%s", diff)
	}
}
