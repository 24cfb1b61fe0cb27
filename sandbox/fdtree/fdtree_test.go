package fdtree

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func owner(t *testing.T, path string) int {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		t.Fatal(err)
	}
	return int(st.Uid)
}

// TestChownTree gives a tree to a uid: its dirs, files, FIFOs and links
// themselves, but not what a link leads to, nor a file with a second name
// outside the tree.
func TestChownTree(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	const uid = 300042
	top, outside := t.TempDir(), t.TempDir()
	secret := filepath.Join(outside, "secret")
	linked := filepath.Join(outside, "linked")
	for _, p := range []string{secret, linked} {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	sub := filepath.Join(top, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	file, fifo := filepath.Join(sub, "file"), filepath.Join(sub, "fifo")
	os.WriteFile(file, nil, 0o644)
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	link, dirLink, hard := filepath.Join(sub, "link"), filepath.Join(top, "dirlink"), filepath.Join(sub, "hard")
	os.Symlink(secret, link)
	os.Symlink(outside, dirLink)
	if err := os.Link(linked, hard); err != nil {
		t.Fatal(err)
	}
	d, err := Open(top)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.ChownTree(uid, uid); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{top, filepath.Join(top, "a"), sub, file, fifo, link, dirLink} {
		if got := owner(t, p); got != uid {
			t.Errorf("%s belongs to %d, want %d", p, got, uid)
		}
	}
	for _, p := range []string{outside, secret, linked} {
		if got := owner(t, p); got != 0 {
			t.Errorf("%s, outside the tree, belongs to %d now", p, got)
		}
	}
}

// TestOpenRefusesALink: the last component of what Open and Dir.Open
// open is never followed.
func TestOpenRefusesALink(t *testing.T) {
	top := t.TempDir()
	os.Mkdir(filepath.Join(top, "real"), 0o755)
	os.Symlink(filepath.Join(top, "real"), filepath.Join(top, "link"))
	os.WriteFile(filepath.Join(top, "file"), nil, 0o644)
	for _, name := range []string{"link", "file"} {
		if d, err := Open(filepath.Join(top, name)); !errors.Is(err, ErrNotDir) {
			t.Errorf("Open(%s) = %v, %v; want ErrNotDir", name, d, err)
		}
	}
	d, err := OpenBeneath(filepath.Dir(top), filepath.Join(filepath.Base(top), "link"), 0)
	if !errors.Is(err, ErrNotDir) {
		t.Errorf("OpenBeneath through a link = %v, %v; want ErrNotDir", d, err)
	}
	d, err = OpenBeneath(top, "real/new/newer", 0o700)
	if err != nil {
		t.Fatalf("OpenBeneath making dirs: %v", err)
	}
	d.Close()
	if fi, err := os.Lstat(filepath.Join(top, "real", "new", "newer")); err != nil || !fi.IsDir() {
		t.Errorf("OpenBeneath did not make real/new/newer: %v", err)
	}
	if _, err := OpenBeneath(top, "link/x", 0o700); !errors.Is(err, ErrNotDir) {
		t.Errorf("OpenBeneath making dirs through a link: %v; want ErrNotDir", err)
	}
	if _, err := os.Lstat(filepath.Join(top, "real", "x")); err == nil {
		t.Error("OpenBeneath made a dir through a link")
	}
}

// BenchmarkChownTree walks a tree of 100 dirs of 100 files that belongs
// to the uid already (what every walk after the first finds), against
// the walk by path it replaced (filepath.WalkDir, Lstat, Lchown).
func BenchmarkChownTree(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root")
	}
	const uid = 300042
	top := b.TempDir()
	for i := range 100 {
		d := filepath.Join(top, fmt.Sprintf("d%02d", i))
		os.Mkdir(d, 0o755)
		for j := range 100 {
			os.WriteFile(filepath.Join(d, fmt.Sprintf("f%02d", j)), nil, 0o644)
		}
	}
	b.Run("fdtree", func(b *testing.B) {
		for b.Loop() {
			d, err := Open(top)
			if err != nil {
				b.Fatal(err)
			}
			if err := d.ChownTree(uid, uid); err != nil {
				b.Fatal(err)
			}
			d.Close()
		}
	})
	b.Run("walkdir", func(b *testing.B) {
		for b.Loop() {
			err := filepath.WalkDir(top, func(p string, e fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				info, err := e.Info()
				if err != nil {
					return err
				}
				if st := info.Sys().(*syscall.Stat_t); int(st.Uid) == uid && int(st.Gid) == uid {
					return nil
				}
				return os.Lchown(p, uid, uid)
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}
