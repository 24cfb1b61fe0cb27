package filetree

import (
	"errors"
	"io/fs"

	"golang.org/x/sys/unix"

	"parley/safefile"
)

// errNotDir is a directory asked for where there is something else.
var errNotDir = unix.ENOTDIR

// Kind is what an entry is.
type Kind string

// The kinds of entries.
const (
	KindDir   Kind = "dir"
	KindFile  Kind = "file"
	KindLink  Kind = "link"  // listed with its text, never followed
	KindOther Kind = "other" // a FIFO, device or socket: never opened
)

// Entry is one name in a directory.
type Entry struct {
	Name   string
	Kind   Kind
	Size   int64  // a file's size
	Target string // a link's text
	Type   string // what an "other" entry is ("a FIFO")
}

// describe is the entry name of the directory fd; false if it is gone.
func describe(fd int, name string) (Entry, bool) {
	var st unix.Stat_t
	if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return Entry{}, false
	}
	e := Entry{Name: name}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		e.Kind = KindDir
	case unix.S_IFREG:
		e.Kind, e.Size = KindFile, st.Size
	case unix.S_IFLNK:
		e.Kind = KindLink
		buf := make([]byte, 4096)
		if n, err := unix.Readlinkat(fd, name, buf); err == nil {
			e.Target = string(buf[:n])
		}
	default:
		e.Kind, e.Type = KindOther, typeName(st.Mode)
	}
	return e, true
}

func rank(k Kind) int {
	if k == KindDir {
		return 0
	}
	return 1
}

func typeName(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFCHR, unix.S_IFBLK:
		return "a device"
	case unix.S_IFSOCK:
		return "a socket"
	}
	return "not a regular file"
}

func modeName(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "not a regular file"
}

// Describe is the entry p of the tree (a path Clean accepted) without
// following it: what the view of a link or a FIFO says it is.
func (t *Tree) Describe(p string) (Entry, error) {
	fi, err := t.dir.Lstat(p)
	if err != nil {
		return Entry{}, err
	}
	e := Entry{Name: fi.Name(), Size: fi.Size(), Kind: KindOther}
	switch m := fi.Mode(); {
	case m.IsDir():
		e.Kind = KindDir
	case m.IsRegular():
		e.Kind = KindFile
	case m&fs.ModeSymlink != 0:
		e.Kind = KindLink
		e.Target, _ = t.dir.Readlink(p)
	default:
		e.Type = modeName(m)
	}
	return e, nil
}

// Refused reports whether err is a refusal of the path itself (as
// opposed to a failure to read): a bad path, a link, or not a file.
func Refused(err error) bool {
	return errors.Is(err, ErrBadPath) || errors.Is(err, safefile.ErrBadName) || safefile.Refused(err)
}
