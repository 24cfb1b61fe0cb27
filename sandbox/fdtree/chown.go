package fdtree

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// maxDepth bounds how deep ChownTree goes: each level holds a descriptor.
const maxDepth = 1024

// ChownTree gives d and everything under it to uid and gid, without
// following a link, through descriptors only. A directory is entered only
// by openat(O_NOFOLLOW|O_DIRECTORY) from its parent's descriptor and
// fstat of the result; every other entry is changed by fchownat on an
// O_PATH descriptor of the entry itself (the link itself, for a link),
// after fstat on that descriptor. What it leaves alone, as someone else's
// or not the tree's: another file system mounted in the tree, and a file
// with more than one link (the other name may be outside the tree: a
// hard link to it must not hand it over). An entry that goes away or
// turns into a link meanwhile is skipped: whoever did that owns its
// parent already.
func (d *Dir) ChownTree(uid, gid int) error {
	return d.chownTree(uid, gid, d.st.Dev, 0)
}

func (d *Dir) chownTree(uid, gid int, dev uint64, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("%s: directories nested deeper than %d", d.path, maxDepth)
	}
	if int(d.st.Uid) != uid || int(d.st.Gid) != gid {
		if err := d.Chown(uid, gid); err != nil {
			return err
		}
	}
	for {
		names, err := d.f.Readdirnames(1024)
		for _, name := range names {
			if err := d.chownEntry(name, uid, gid, dev, depth); err != nil {
				return err
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", d.path, err)
		}
	}
}

// chownEntry gives d's entry name (and, for a directory, what is under
// it) to uid and gid.
func (d *Dir) chownEntry(name string, uid, gid int, dev uint64, depth int) error {
	var st unix.Stat_t
	if err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return skipGone(err, d.path, name)
	}
	if st.Dev != dev {
		return nil // another file system mounted here
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		sub, err := d.Open(name)
		if errors.Is(err, ErrNotDir) {
			return nil // swapped for a link or a file since the fstatat
		}
		if err != nil {
			return skipGone(err, d.path, name)
		}
		defer sub.Close()
		if sub.st.Dev != dev {
			return nil
		}
		return sub.chownTree(uid, gid, dev, depth+1)
	}
	if int(st.Uid) == uid && int(st.Gid) == gid {
		return nil
	}
	return d.chownOne(name, uid, gid, dev)
}

// chownOne gives d's entry name, not a directory, to uid and gid: through
// an O_PATH descriptor of the entry (a link is opened as itself, a FIFO
// or device is not opened for I/O), checked by fstat.
func (d *Dir) chownOne(name string, uid, gid int, dev uint64) error {
	fd, err := unix.Openat(d.fd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return skipGone(err, d.path, name)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &os.PathError{Op: "fstat", Path: filepath.Join(d.path, name), Err: err}
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR || st.Dev != dev || st.Nlink > 1 {
		return nil // a directory now (entered only by ChownTree), or not only the tree's
	}
	// AT_EMPTY_PATH: the file fd refers to; AT_SYMLINK_NOFOLLOW: a link
	// itself, should fd be one.
	if err := unix.Fchownat(fd, "", uid, gid, unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &os.PathError{Op: "chown", Path: filepath.Join(d.path, name), Err: err}
	}
	return nil
}

// ChownFile gives d's entry name, a regular file with no other link, to
// uid and gid, without following a link; anything else there is an error.
func (d *Dir) ChownFile(name string, uid, gid int) error {
	if err := checkName(name); err != nil {
		return err
	}
	path := filepath.Join(d.path, name)
	fd, err := unix.Openat(d.fd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 1 {
		return fmt.Errorf("%s is not a regular file with one link (mode %o, %d links)", path, st.Mode, st.Nlink)
	}
	if err := unix.Fchownat(fd, "", uid, gid, unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &os.PathError{Op: "chown", Path: path, Err: err}
	}
	return nil
}

// skipGone is nil for an entry that went away (or became a link or a
// file where a directory was) since it was listed, else err about it.
func skipGone(err error, dir, name string) error {
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		return nil
	}
	return fmt.Errorf("%s: %w", filepath.Join(dir, name), err)
}
