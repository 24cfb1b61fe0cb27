// Package fdtree changes the owner and mode of directory trees that
// someone else may change at the same time (a project's runs, when Parley
// works on the project's files as root), without ever following a link:
// every directory is opened from its parent's descriptor with O_NOFOLLOW
// and checked by fstat, every entry is changed through a descriptor of
// the entry itself, and nothing is resolved by path below the top.
//
// Why not os.Root: its methods keep resolution inside the root, but they
// follow links that stay inside it (Root.Chown and Root.Chmod follow a
// last-component link, every method follows links in the middle of a
// name), and each call resolves its name again from the top. Here no link
// is followed at all, and an entry is changed only after fstat on the
// very descriptor the change goes through has shown what it is.
package fdtree

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrNotDir is returned, wrapped, when what should be a directory is not
// one: a link, a file, or gone.
var ErrNotDir = errors.New("is not a directory (or is a link)")

// Dir is a directory opened without following a link.
type Dir struct {
	f    *os.File // owns the descriptor; reads the entries
	fd   int
	path string // for messages only; never opened
	st   unix.Stat_t
}

// Open opens the directory at path. Its last component is not followed
// (a link there is ErrNotDir); the components before it are resolved as
// usual, so they must be ones no one else can change.
func Open(path string) (*Dir, error) {
	path = filepath.Clean(path)
	parent, err := openFollowing(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	defer parent.Close()
	return parent.Open(filepath.Base(path))
}

// OpenBeneath opens base (following links: it is trusted), then each
// component of the relative path rel below it, none followed. With perm
// not 0, a missing component is made with mode perm (less the umask).
func OpenBeneath(base, rel string, perm os.FileMode) (*Dir, error) {
	d, err := openFollowing(base)
	if err != nil {
		return nil, err
	}
	if rel == "" || rel == "." {
		return d, nil
	}
	for _, name := range strings.Split(filepath.Clean(rel), string(filepath.Separator)) {
		if perm != 0 {
			if err := d.Mkdir(name, perm); err != nil {
				d.Close()
				return nil, err
			}
		}
		sub, err := d.Open(name)
		d.Close()
		if err != nil {
			return nil, err
		}
		d = sub
	}
	return d, nil
}

// openFollowing opens the directory at path, following links.
func openFollowing(path string) (*Dir, error) {
	return openAt(unix.AT_FDCWD, path, path, 0)
}

// openAt opens name relative to dirfd as a directory (path names it in
// messages) and checks by fstat that it is one.
func openAt(dirfd int, name, path string, flags int) (*Dir, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|flags, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			return nil, fmt.Errorf("%s %w", path, ErrNotDir)
		}
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	d := &Dir{f: os.NewFile(uintptr(fd), path), fd: fd, path: path}
	if err := unix.Fstat(fd, &d.st); err != nil {
		d.Close()
		return nil, &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	if d.st.Mode&unix.S_IFMT != unix.S_IFDIR {
		d.Close()
		return nil, fmt.Errorf("%s %w", path, ErrNotDir)
	}
	return d, nil
}

// Open opens d's entry name, a directory, without following a link.
func (d *Dir) Open(name string) (*Dir, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	return openAt(d.fd, name, filepath.Join(d.path, name), unix.O_NOFOLLOW)
}

// Mkdir makes d's entry name a directory of mode perm (less the umask),
// unless it exists. mkdirat makes no directory through a link.
func (d *Dir) Mkdir(name string, perm os.FileMode) error {
	if err := checkName(name); err != nil {
		return err
	}
	if err := unix.Mkdirat(d.fd, name, uint32(perm.Perm())); err != nil && !errors.Is(err, unix.EEXIST) {
		return &os.PathError{Op: "mkdir", Path: filepath.Join(d.path, name), Err: err}
	}
	return nil
}

// Close closes d.
func (d *Dir) Close() error { return d.f.Close() }

// Owner is d's owner and group, as d was opened.
func (d *Dir) Owner() (uid, gid int) { return int(d.st.Uid), int(d.st.Gid) }

// Perm is d's permission bits, as d was opened.
func (d *Dir) Perm() os.FileMode { return os.FileMode(d.st.Mode & 0o777) }

// Chown gives d itself to uid and gid (fchown).
func (d *Dir) Chown(uid, gid int) error {
	if err := unix.Fchown(d.fd, uid, gid); err != nil {
		return &os.PathError{Op: "chown", Path: d.path, Err: err}
	}
	d.st.Uid, d.st.Gid = uint32(uid), uint32(gid)
	return nil
}

// Chmod sets d's permission bits (fchmod).
func (d *Dir) Chmod(perm os.FileMode) error {
	if err := unix.Fchmod(d.fd, uint32(perm.Perm())); err != nil {
		return &os.PathError{Op: "chmod", Path: d.path, Err: err}
	}
	d.st.Mode = d.st.Mode&^0o777 | uint32(perm.Perm())
	return nil
}

// checkName refuses a name that is not one entry of a directory.
func checkName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') {
		return fmt.Errorf("%q is not the name of an entry", name)
	}
	return nil
}
