package filetree

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"parley/safefile"
)

// worktree is what a run may leave behind: text, a huge file, a binary,
// links in and out, a linked directory, a FIFO, a device, and git's file.
func worktree(t *testing.T) (base string) {
	t.Helper()
	base = t.TempDir()
	top := filepath.Join(base, "wt")
	write := func(name string, data []byte) {
		t.Helper()
		p := filepath.Join(top, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("main.go", []byte("package main\n"))
	write("src/lib.go", []byte("package lib\n"))
	write("huge.log", bytes.Repeat([]byte("é log line\n"), 200_000)) // 2.4 MB, 2-byte characters
	write("image.bin", []byte("GIF89a\x00\x01\x02"))
	write("latin1.txt", []byte("caf\xe9\n"))
	write(".git", []byte("gitdir: /somewhere/else\n"))
	write("../secret", []byte("outside"))
	for name, target := range map[string]string{"in": "main.go", "passwd": "/etc/passwd", "out": "../secret", "srcln": "src", "etc": "/etc"} {
		if err := os.Symlink(target, filepath.Join(top, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Mkfifo(filepath.Join(top, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mknod(filepath.Join(top, "zero"), unix.S_IFCHR|0o644, int(unix.Mkdev(1, 5))); err != nil {
		t.Logf("no device node: %v", err)
	}
	return base
}

func open(t *testing.T) *Tree {
	t.Helper()
	tr, err := Open(worktree(t), "wt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr
}

// The listing shows links as links with their text, the FIFO as what it
// is, hides .git, and opens none of them.
func TestList(t *testing.T) {
	tr := open(t)
	l, err := tr.ListPage("", Cursor{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Entry{}
	for _, e := range l.Entries {
		got[e.Name] = e
	}
	want := map[string]Entry{
		"src":        {Name: "src", Kind: KindDir},
		"main.go":    {Name: "main.go", Kind: KindFile, Size: 13},
		"huge.log":   {Name: "huge.log", Kind: KindFile, Size: 2_400_000},
		"image.bin":  {Name: "image.bin", Kind: KindFile, Size: 9},
		"latin1.txt": {Name: "latin1.txt", Kind: KindFile, Size: 5},
		"in":         {Name: "in", Kind: KindLink, Target: "main.go"},
		"passwd":     {Name: "passwd", Kind: KindLink, Target: "/etc/passwd"},
		"out":        {Name: "out", Kind: KindLink, Target: "../secret"},
		"srcln":      {Name: "srcln", Kind: KindLink, Target: "src"},
		"etc":        {Name: "etc", Kind: KindLink, Target: "/etc"},
		"fifo":       {Name: "fifo", Kind: KindOther, Type: "a FIFO"},
	}
	if _, ok := got["zero"]; ok {
		want["zero"] = Entry{Name: "zero", Kind: KindOther, Type: "a device"}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("listing (-want +got):\n%s", diff)
	}
	if l.Entries[0].Name != "src" {
		t.Errorf("first entry %q; directories come first", l.Entries[0].Name)
	}
	if _, err := tr.ListPage("srcln", Cursor{}, 0); !errors.Is(err, safefile.ErrSymlink) {
		t.Errorf("ListPage(srcln) = %v, want a refused link", err)
	}
	if _, err := tr.ListPage("etc", Cursor{}, 0); !errors.Is(err, safefile.ErrSymlink) {
		t.Errorf("ListPage(etc) = %v, want a refused link", err)
	}
}

// Read reads a file up to the cap, tells binary from text, and refuses
// every link (in or out of the tree), a path through a linked directory,
// "..", an absolute path, NUL, the FIFO and the device, reading nothing.
func TestRead(t *testing.T) {
	tr := open(t)
	tests := []struct {
		path      string
		err       error
		data      string
		truncated bool
		binary    bool
	}{
		{path: "main.go", data: "package main\n"},
		{path: "src/lib.go", data: "package lib\n"},
		{path: "image.bin", data: "GIF89a\x00\x01\x02", binary: true},
		{path: "latin1.txt", data: "caf\xe9\n", binary: true},
		{path: "in", err: safefile.ErrSymlink},
		{path: "passwd", err: safefile.ErrSymlink},
		{path: "out", err: safefile.ErrSymlink},
		{path: "srcln/lib.go", err: safefile.ErrSymlink},
		{path: "etc/passwd", err: safefile.ErrSymlink},
		{path: "fifo", err: safefile.ErrNotRegular},
		{path: "src", err: safefile.ErrNotRegular},
		{path: "nothing", err: fs.ErrNotExist},
		{path: "../secret", err: ErrBadPath},
		{path: "/etc/passwd", err: ErrBadPath},
		{path: "src/../main.go", err: ErrBadPath},
		{path: "main.go\x00", err: ErrBadPath},
		{path: ".git", err: ErrHidden},
	}
	if _, err := os.Lstat(filepath.Join(tr.dir.File().Name(), "zero")); err == nil {
		tests = append(tests, struct {
			path      string
			err       error
			data      string
			truncated bool
			binary    bool
		}{path: "zero", err: safefile.ErrNotRegular})
	}
	for _, tt := range tests {
		p, err := Clean(tt.path)
		var c Content
		if err == nil {
			c, err = tr.Read(p, 100)
		}
		if !errors.Is(err, tt.err) {
			t.Errorf("Read(%q) = %v, want %v", tt.path, err, tt.err)
			continue
		}
		if err != nil && !Refused(err) && !Missing(err) {
			t.Errorf("Read(%q) = %v: neither a refusal nor a missing file", tt.path, err)
		}
		if string(c.Data) != tt.data || c.Binary != tt.binary || c.Truncated != tt.truncated {
			t.Errorf("Read(%q) = %q binary %v truncated %v; want %q %v %v", tt.path, c.Data, c.Binary, c.Truncated, tt.data, tt.binary, tt.truncated)
		}
	}
}

// A file larger than the cap is read up to it, and is still text when the
// cap cuts a character in half.
func TestReadHuge(t *testing.T) {
	tr := open(t)
	c, err := tr.Read("huge.log", MaxView)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Data) != MaxView || !c.Truncated || c.Size != 2_400_000 || c.Binary {
		t.Errorf("huge: %d bytes, truncated %v, size %d, binary %v", len(c.Data), c.Truncated, c.Size, c.Binary)
	}
	c, err = tr.Read("huge.log", 1) // half of "é"
	if err != nil || c.Binary {
		t.Errorf("cut in a character: binary %v, %v", c.Binary, err)
	}
}
