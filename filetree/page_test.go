package filetree

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestListPage: a folder of 23 folders, 40 files, a link and .git, read
// 7 entries a page from the start, page after page, is every entry once,
// in the listing's order (folders first, then by name), each page counting those before it and the total.
func TestListPage(t *testing.T) {
	base := t.TempDir()
	for i := range 23 {
		if err := os.Mkdir(filepath.Join(base, fmt.Sprintf("z%02d", i)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 40 {
		if err := os.WriteFile(filepath.Join(base, fmt.Sprintf("a%02d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/etc", filepath.Join(base, "m-link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(base, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	tr, err := Open(filepath.Dir(base), filepath.Base(base))
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	// The listing, worked out apart from ListPage: the 23 folders, then
	// the 40 files and the link by name; never .git.
	var all []Entry
	for i := range 23 {
		all = append(all, Entry{Name: fmt.Sprintf("z%02d", i), Kind: KindDir})
	}
	for i := range 40 {
		all = append(all, Entry{Name: fmt.Sprintf("a%02d", i), Kind: KindFile})
	}
	all = append(all, Entry{Name: "m-link", Kind: KindLink, Target: "/etc"})
	var got []Entry
	var after Cursor
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("more than 10 pages of 7 for 64 entries")
		}
		pg, err := tr.ListPage("", after, 7)
		if err != nil {
			t.Fatal(err)
		}
		if pg.Total != 64 || pg.Before != len(got) || pg.Truncated {
			t.Fatalf("page %d: total %d, before %d, truncated %v; want 64, %d, false", pages, pg.Total, pg.Before, pg.Truncated, len(got))
		}
		got = append(got, pg.Entries...)
		if !pg.More() {
			break
		}
		if len(pg.Entries) != 7 {
			t.Fatalf("page %d has %d entries and more follow", pages, len(pg.Entries))
		}
		after = CursorOf(pg.Entries[len(pg.Entries)-1])
	}
	if d := cmp.Diff(all, got); d != "" {
		t.Errorf("pages differ from the listing (-want +pages):\n%s", d)
	}
}

// BenchmarkListPage is the cost of a page of a folder of 100,000 files:
// the first page and the last (each reads every name; the last describes
// only the names after its cursor).
func BenchmarkListPage(b *testing.B) {
	base := b.TempDir()
	const n = 100_000
	for i := range n {
		if err := os.WriteFile(filepath.Join(base, fmt.Sprintf("f%06d", i)), nil, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	tr, err := Open(filepath.Dir(base), filepath.Base(base))
	if err != nil {
		b.Fatal(err)
	}
	defer tr.Close()
	for _, bc := range []struct {
		name  string
		after Cursor
	}{{"first", Cursor{}}, {"last", Cursor{Name: fmt.Sprintf("f%06d", n-PageSize-1)}}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if pg, err := tr.ListPage("", bc.after, PageSize); err != nil || len(pg.Entries) != PageSize || pg.Total != n {
					b.Fatalf("page: %d entries of %d, %v", len(pg.Entries), pg.Total, err)
				}
			}
		})
	}
}
