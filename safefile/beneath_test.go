package safefile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// hostileTree is what a run could leave in a worktree: links inside and
// out, a linked directory, a FIFO and a device.
func hostileTree(t *testing.T) (base string) {
	t.Helper()
	base = t.TempDir()
	top := filepath.Join(base, "top")
	must(t, os.MkdirAll(filepath.Join(top, "sub"), 0o755))
	must(t, os.WriteFile(filepath.Join(top, "sub", "f.txt"), []byte("inside"), 0o644))
	must(t, os.WriteFile(filepath.Join(base, "secret"), []byte("outside"), 0o644))
	must(t, os.Symlink("sub/f.txt", filepath.Join(top, "in")))
	must(t, os.Symlink("../secret", filepath.Join(top, "out")))
	must(t, os.Symlink("/etc/passwd", filepath.Join(top, "abs")))
	must(t, os.Symlink("sub", filepath.Join(top, "subln")))
	must(t, os.Symlink(base, filepath.Join(top, "up")))
	must(t, unix.Mkfifo(filepath.Join(top, "fifo"), 0o644))
	if err := unix.Mknod(filepath.Join(top, "dev"), unix.S_IFCHR|0o644, int(unix.Mkdev(1, 5))); err != nil {
		t.Logf("no device node (%v): the device case is skipped", err)
	}
	must(t, os.Symlink("top", filepath.Join(base, "toplink")))
	return base
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Every name is resolved beneath the Dir without following a link, with
// openat2 and with the O_NOFOLLOW walk alike; a FIFO or device is refused
// before it is opened (the test would hang on a FIFO opened for reading
// without O_NONBLOCK, and /dev/zero would read forever).
func TestDirOpenRegular(t *testing.T) {
	base := hostileTree(t)
	for _, walk := range []bool{false, true} {
		d, err := OpenDir(base, "top")
		must(t, err)
		d.walk = d.walk || walk
		tests := []struct {
			name string
			want string
			err  error
		}{
			{"sub/f.txt", "inside", nil},
			{"in", "", ErrSymlink},          // a link inside the tree
			{"out", "", ErrSymlink},         // a relative link out of it
			{"abs", "", ErrSymlink},         // an absolute link out of it
			{"subln/f.txt", "", ErrSymlink}, // through a linked directory
			{"up/secret", "", ErrSymlink},   // through a link to the parent
			{"../secret", "", ErrBadName},   // dot-dot
			{"sub/../sub/f.txt", "", ErrBadName},
			{"/etc/passwd", "", ErrBadName},    // absolute
			{"sub/f.txt\x00x", "", ErrBadName}, // NUL
			{"fifo", "", ErrNotRegular},
			{"sub", "", ErrNotRegular},
			{"missing", "", fs.ErrNotExist},
		}
		if _, err := os.Lstat(filepath.Join(base, "top", "dev")); err == nil {
			tests = append(tests, struct {
				name string
				want string
				err  error
			}{"dev", "", ErrNotRegular})
		}
		for _, tt := range tests {
			done := make(chan struct{})
			go func() {
				defer close(done)
				f, _, err := d.OpenRegular(tt.name)
				if !errors.Is(err, tt.err) {
					t.Errorf("walk=%v: OpenRegular(%q) = %v, want %v", walk, tt.name, err, tt.err)
				}
				if err == nil {
					b, _ := io.ReadAll(f)
					f.Close()
					if string(b) != tt.want {
						t.Errorf("walk=%v: %q read %q, want %q", walk, tt.name, b, tt.want)
					}
				}
			}()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatalf("walk=%v: OpenRegular(%q) hangs", walk, tt.name)
			}
		}
		d.Close()
	}
}

// A link is described as a link, with its text, and never followed; a
// directory reached through a link is refused.
func TestDirLinks(t *testing.T) {
	base := hostileTree(t)
	for _, walk := range []bool{false, true} {
		d, err := OpenDir(base, "top")
		must(t, err)
		d.walk = d.walk || walk
		fi, err := d.Lstat("abs")
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			t.Errorf("walk=%v: Lstat(abs) = %v, %v; want a link", walk, fi, err)
		}
		if got, err := d.Readlink("abs"); got != "/etc/passwd" || err != nil {
			t.Errorf("walk=%v: Readlink(abs) = %q, %v", walk, got, err)
		}
		if _, err := d.Sub("subln"); !errors.Is(err, ErrSymlink) {
			t.Errorf("walk=%v: Sub(subln) = %v, want ErrSymlink", walk, err)
		}
		if _, err := d.Lstat("subln/f.txt"); !errors.Is(err, ErrSymlink) {
			t.Errorf("walk=%v: Lstat(subln/f.txt) = %v, want ErrSymlink", walk, err)
		}
		d.Close()
	}
	// The top itself may not be a link either.
	if _, err := OpenDir(base, "toplink"); !errors.Is(err, ErrSymlink) {
		t.Errorf("OpenDir(toplink) = %v, want ErrSymlink", err)
	}
}

// A run that swaps a file for a link (or a FIFO) and a folder for a link
// to another one while Parley opens them, as fast as it can
// (renameat2 RENAME_EXCHANGE), never gets Parley to read past the link:
// every open either reads the tree's own file or is refused.
func TestDirSwapAttack(t *testing.T) {
	base := t.TempDir()
	top := filepath.Join(base, "top")
	must(t, os.MkdirAll(filepath.Join(top, "d"), 0o755))
	must(t, os.MkdirAll(filepath.Join(base, "elsewhere"), 0o755))
	must(t, os.WriteFile(filepath.Join(base, "elsewhere", "x"), []byte("outside"), 0o644))
	must(t, os.WriteFile(filepath.Join(top, "d", "x"), []byte("inside"), 0o644))
	must(t, os.WriteFile(filepath.Join(top, "f"), []byte("inside"), 0o644))
	must(t, os.Symlink(filepath.Join(base, "elsewhere", "x"), filepath.Join(top, "flink")))
	must(t, unix.Mkfifo(filepath.Join(top, "fifo"), 0o644))
	must(t, os.Symlink(filepath.Join(base, "elsewhere"), filepath.Join(top, "dlink")))
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			a, b := "f", "flink"
			switch i % 3 {
			case 1:
				b = "fifo"
			case 2:
				a, b = "d", "dlink"
			}
			unix.Renameat2(unix.AT_FDCWD, filepath.Join(top, a), unix.AT_FDCWD, filepath.Join(top, b), unix.RENAME_EXCHANGE)
		}
	}()
	defer func() { close(stop); <-done }()
	for _, walk := range []bool{false, true} {
		d, err := OpenDir(base, "top")
		must(t, err)
		d.walk = d.walk || walk
		read := 0
		for i := 0; i < 3000; i++ {
			name := []string{"f", "d/x"}[i%2]
			f, _, err := d.OpenRegular(name)
			if err != nil {
				continue
			}
			b, _ := io.ReadAll(f)
			f.Close()
			if string(b) != "inside" {
				t.Fatalf("walk=%v: %s read %q", walk, name, b)
			}
			read++
		}
		d.Close()
		t.Logf("walk=%v: %d of 3000 opens read the tree's own file, the rest were refused", walk, read)
	}
}
