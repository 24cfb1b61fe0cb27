package safefile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrBadName refuses a name that is not a plain relative path: empty
// components, ".", "..", a leading "/", or a NUL byte.
var ErrBadName = errors.New("is not a plain relative path")

// ErrChanged refuses a file that was replaced between its check and its
// opening.
var ErrChanged = errors.New("changed while it was being opened")

// resolveBeneath are openat2's rules for every name under a Dir: stay
// below it, follow no symbolic link anywhere in the name, and no
// /proc-style magic link either.
const resolveBeneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// Dir is a directory someone else writes, held by a descriptor. Every
// name opened under it is resolved beneath it with no symbolic link
// followed, in any component: with openat2 (RESOLVE_BENEATH |
// RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS) where the kernel has it,
// else by opening one component at a time with O_NOFOLLOW.
type Dir struct {
	f    *os.File
	walk bool // no openat2 here: resolve component by component
}

// OpenDir opens base/rel as a Dir: base is trusted (its links are
// followed), rel is not (no link in it is followed). rel may be "".
func OpenDir(base, rel string) (*Dir, error) {
	fd, err := unix.Open(base, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: base, Err: err}
	}
	top := &Dir{f: os.NewFile(uintptr(fd), base)}
	defer top.Close()
	if _, err := unix.Openat2(-1, "", &unix.OpenHow{}); errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) {
		top.walk = true // no openat2 (an old kernel, or a seccomp filter)
	}
	return top.Sub(filepath.ToSlash(rel))
}

// Close releases the directory's descriptor.
func (d *Dir) Close() error { return d.f.Close() }

// File is the directory's own descriptor, to read its entries (ReadDir)
// or to look at them with the *at calls, which never resolve more than
// the one name given.
func (d *Dir) File() *os.File { return d.f }

// Sub opens the directory name under d as a Dir of its own.
func (d *Dir) Sub(name string) (*Dir, error) {
	f, err := d.Open(name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NONBLOCK)
	if errors.Is(err, unix.ENOTDIR) {
		// O_DIRECTORY|O_NOFOLLOW on a link fails as on a file: say which.
		if fi, lerr := d.Lstat(name); lerr == nil && fi.Mode()&os.ModeSymlink != 0 {
			err = fmt.Errorf("%s %w", name, ErrSymlink)
		}
	}
	if err != nil {
		return nil, err
	}
	return &Dir{f: f, walk: d.walk}, nil
}

// Lstat describes name under d without following it: a symbolic link as
// the last component is described as a link.
func (d *Dir) Lstat(name string) (os.FileInfo, error) {
	f, err := d.Open(name, unix.O_PATH)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Stat()
}

// OpenRegular opens the regular file name under d for reading. Its type
// is checked (fstat on an O_PATH descriptor) before it is opened, so a
// FIFO, device or socket is never opened; it is then opened with
// O_NONBLOCK (a FIFO swapped in meanwhile cannot hang the read) and
// refused if it is not the file checked.
func (d *Dir) OpenRegular(name string) (*os.File, os.FileInfo, error) {
	before, err := d.Lstat(name)
	if err != nil {
		return nil, nil, err
	}
	if err := regular(name, before); err != nil {
		return nil, nil, err
	}
	f, err := d.Open(name, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY)
	if err != nil {
		return nil, nil, err
	}
	after, err := f.Stat()
	if err == nil && !os.SameFile(before, after) {
		err = fmt.Errorf("%s %w", name, ErrChanged)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, after, nil
}

// regular refuses anything but a regular file.
func regular(name string, fi os.FileInfo) error {
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		return fmt.Errorf("%s %w", name, ErrSymlink)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%s %w (%s)", name, ErrNotRegular, kind(fi.Mode()))
	}
	return nil
}

// Readlink returns the text of the symbolic link name under d, without
// following it or any link before it.
func (d *Dir) Readlink(name string) (string, error) {
	f, err := d.Open(name, unix.O_PATH)
	if err != nil {
		return "", err
	}
	defer f.Close()
	buf := make([]byte, 4096)
	// readlinkat with an empty name reads the link an O_PATH|O_NOFOLLOW
	// descriptor refers to (Linux ≥ 2.6.39).
	n, err := unix.Readlinkat(int(f.Fd()), "", buf)
	if err != nil {
		return "", &os.PathError{Op: "readlink", Path: name, Err: err}
	}
	return string(buf[:n]), nil
}

// Open opens name (slash-separated, relative) under d with flags, adding
// O_NOFOLLOW and O_CLOEXEC. A symbolic link in any component but the last
// is ErrSymlink; as the last, it is ErrSymlink too unless flags has
// O_PATH (then the descriptor is the link's own).
func (d *Dir) Open(name string, flags int) (*os.File, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	flags |= unix.O_NOFOLLOW | unix.O_CLOEXEC
	var fd int
	var err error
	if name == "" {
		fd, err = unix.Openat(int(d.f.Fd()), ".", flags, 0)
	} else if d.walk {
		fd, err = d.walkOpen(name, flags)
	} else {
		fd, err = unix.Openat2(int(d.f.Fd()), name, &unix.OpenHow{Flags: uint64(flags), Resolve: resolveBeneath})
	}
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) {
		return nil, fmt.Errorf("%s: a path through a symbolic link is not followed: %w", name, ErrSymlink)
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	return os.NewFile(uintptr(fd), name), nil
}

// walkOpen resolves name one component at a time, each opened with
// O_PATH|O_NOFOLLOW from its parent's descriptor and checked by fstat to
// be a directory before the next is looked up in it.
func (d *Dir) walkOpen(name string, flags int) (int, error) {
	parts := strings.Split(name, "/")
	cur, err := unix.Dup(int(d.f.Fd()))
	if err != nil {
		return -1, err
	}
	for _, p := range parts[:len(parts)-1] {
		next, err := unix.Openat(cur, p, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(cur)
		if err != nil {
			return -1, err
		}
		var st unix.Stat_t
		if err := unix.Fstat(next, &st); err != nil {
			unix.Close(next)
			return -1, err
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
		case unix.S_IFLNK:
			unix.Close(next)
			return -1, unix.ELOOP
		default:
			unix.Close(next)
			return -1, unix.ENOTDIR
		}
		cur = next
	}
	defer unix.Close(cur)
	return unix.Openat(cur, parts[len(parts)-1], flags, 0)
}

// CheckName refuses a name Dir will not resolve: it must be "" (the
// directory itself) or slash-separated components, none empty, "." or
// "..", with no NUL byte and no leading slash.
func CheckName(name string) error {
	if name == "" {
		return nil
	}
	if strings.IndexByte(name, 0) >= 0 {
		return fmt.Errorf("%q %w", name, ErrBadName)
	}
	for _, p := range strings.Split(name, "/") {
		if p == "" || p == "." || p == ".." {
			return fmt.Errorf("%q %w", name, ErrBadName)
		}
	}
	return nil
}
