// Package filetree shows the files of a directory someone else writes (a
// session's worktree, a project's workspace) to a browser, read-only and
// without ever following a symbolic link: it lists a directory, reads a
// file up to a bound and tells text from binary. Every name is resolved
// through safefile.Dir (openat2 with RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS,
// or an O_NOFOLLOW walk), so a link a run planted, pointing inside the
// tree or out of it, is listed as a link and never opened.
package filetree

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"parley/safefile"
)

// Bounds of what a page gets.
const (
	MaxView    = 1 << 20 // bytes of a file shown
	maxPath    = 4096    // bytes of a path asked for
	sniffBytes = 8000    // bytes looked at for a NUL (as git does)
)

// Errors a refused path is reported with; test them with errors.Is.
// safefile's ErrSymlink (a link, or a path through one) and ErrNotRegular
// (a FIFO, device or socket) come through as they are.
var (
	ErrBadPath = errors.New("is not a path inside this folder")
	ErrHidden  = errors.New("is hidden")
	// ErrLinkedIn refuses a file of another owner than the tree's with
	// more than one name: a hard link into the tree of a file that may
	// live outside it (checkLinks).
	ErrLinkedIn = errors.New("is a hard link to a file of another owner")
)

// Tree is a directory opened without following links.
type Tree struct {
	dir *safefile.Dir
	uid uint32 // the top directory's owner: the runs' uid
}

// Open opens base/rel as a Tree: base is trusted (a directory only Parley
// writes), rel is not (a run may have put a link anywhere in it).
func Open(base, rel string) (*Tree, error) {
	d, err := safefile.OpenDir(base, rel)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(d.File().Fd()), &st); err != nil {
		d.Close()
		return nil, fmt.Errorf("stat %s: %w", rel, err)
	}
	return &Tree{dir: d, uid: st.Uid}, nil
}

// openRegular is safefile's OpenRegular, refusing a file of another
// owner than the tree's that has more than one name: where the kernel
// lets anyone hard-link any file (fs.protected_hardlinks off), a run
// could link /etc/shadow into its worktree and Parley, as root, would
// read it for the browser.
func (t *Tree) openRegular(p string) (*os.File, os.FileInfo, error) {
	f, fi, err := t.dir.OpenRegular(p)
	if err != nil {
		return nil, nil, err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || (st.Nlink > 1 && st.Uid != t.uid) {
		f.Close()
		return nil, nil, fmt.Errorf("%s %w", p, ErrLinkedIn)
	}
	return f, fi, nil
}

// Close releases the tree's descriptor.
func (t *Tree) Close() error { return t.dir.Close() }

// Clean checks a path a browser asked for and returns it as the tree
// names it: relative, slash-separated, "" for the top. A leading "/",
// "..", ".", an empty component, a NUL byte or a name of git's internals
// (".git") is refused, and nothing is opened.
func Clean(p string) (string, error) {
	p = strings.TrimSuffix(p, "/")
	switch {
	case len(p) > maxPath:
		return "", fmt.Errorf("a path of %d bytes %w", len(p), ErrBadPath)
	case strings.HasPrefix(p, "/"), !utf8.ValidString(p), safefile.CheckName(p) != nil:
		return "", fmt.Errorf("%q %w", p, ErrBadPath)
	}
	for _, c := range strings.Split(p, "/") {
		if hidden(c) {
			return "", fmt.Errorf("%q %w", p, ErrHidden)
		}
	}
	return p, nil
}

// hidden names what the tree never shows: git's own files (a worktree's
// .git file names the repository's internals).
func hidden(name string) bool { return name == ".git" }

// Content is the start of a file, as much as a page shows.
type Content struct {
	Size      int64  // the file's size
	Data      []byte // its first bytes, at most the bound asked for
	Truncated bool   // the file holds more than Data
	Binary    bool   // not text: a NUL byte, or not UTF-8
}

// Read reads at most max bytes of the regular file p (a path Clean
// accepted). A link, a path through one, or anything but a regular file
// is refused and not read.
func (t *Tree) Read(p string, max int64) (Content, error) {
	f, fi, err := t.openRegular(p)
	if err != nil {
		return Content{}, err
	}
	defer f.Close()
	// One byte past max tells a file that is larger than its stat said.
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return Content{}, fmt.Errorf("read %s: %w", p, err)
	}
	c := Content{Size: fi.Size(), Data: b}
	if int64(len(b)) > max || fi.Size() > max {
		c.Data, c.Truncated = b[:min(int64(len(b)), max)], true
	}
	c.Binary = IsBinary(c.Data, c.Truncated)
	return c, nil
}

// IsBinary reports whether data is not text: a NUL byte in its first
// 8000 bytes, or not UTF-8. cut says data is the start of a longer file,
// whose last character may be cut in half.
func IsBinary(data []byte, cut bool) bool {
	if i := strings.IndexByte(string(data[:min(len(data), sniffBytes)]), 0); i >= 0 {
		return true
	}
	if cut {
		// A UTF-8 character is at most 4 bytes: drop one cut at the end.
		for i := 0; i < 3 && len(data) > 0; i++ {
			if r, size := utf8.DecodeLastRune(data); r != utf8.RuneError || size != 1 {
				break
			}
			data = data[:len(data)-1]
		}
	}
	return !utf8.Valid(data)
}

// OpenFile opens the regular file p for a download: the caller copies at
// most Size bytes from it and closes it.
func (t *Tree) OpenFile(p string) (*os.File, int64, error) {
	f, fi, err := t.openRegular(p)
	if err != nil {
		return nil, 0, err
	}
	return f, fi.Size(), nil
}

// Missing reports whether err means there is no such file to show:
// missing, or a directory where a file was asked for or the reverse.
func Missing(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrHidden) || errors.Is(err, errNotDir)
}
