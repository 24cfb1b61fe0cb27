// Package quota holds a project's files to a disk quota where the file
// system has none: it measures what the project's directories take,
// never following a link and never crossing into another file system,
// and watches the projects that have live runs, so that a project over
// its quota is stopped and refused until it is back under.
package quota

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// maxDepth bounds how deep Usage goes: each level holds a descriptor.
// A tree deeper than this is not measured but refused (ErrTooDeep):
// nesting must not be a way to hide files from the quota.
const maxDepth = 512

// minEntry is what every file, directory and link counts at least: an
// empty file takes no block but an inode, and a run that makes millions
// of them fills the file system's inodes as surely as its blocks.
const minEntry = 4096

// ErrTooDeep is returned, wrapped, for a tree nested deeper than Usage
// measures, and ErrUnreadable for a directory it may not open (a run
// that shares Parley's uid, in bubblewrap as a non-root server, may
// chmod one to 000). Both count as over the quota: what cannot be
// measured must not be a way around it.
var (
	ErrTooDeep    = errors.New("directories are nested too deep to measure")
	ErrUnreadable = errors.New("a directory cannot be read to measure it")
)

// Usage is what the trees at dirs take on disk, in bytes: the blocks
// allocated to each entry (at least minEntry an entry), a file with
// several links once, and a tree inside another top once. A directory is entered only through openat with
// O_NOFOLLOW from its parent's descriptor and only if fstat shows it on
// its tree's top's file system: a link is counted as itself, never
// followed, and a mount inside the tree is not counted. A missing top is
// nothing; an entry that goes away while it is read is skipped.
func Usage(dirs ...string) (int64, error) {
	u := usage{seen: map[[2]uint64]bool{}}
	for _, d := range dirs {
		if err := u.top(d); err != nil {
			return u.total, err
		}
	}
	return u.total, nil
}

type usage struct {
	total int64
	seen  map[[2]uint64]bool // device and inode of the directories and multiply linked files counted
}

// top measures the tree at path (its last component not followed).
func (u *usage) top(path string) error {
	parent, err := unix.Open(filepath.Dir(filepath.Clean(path)), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("measure %s: %w", path, err)
	}
	defer unix.Close(parent)
	var st unix.Stat_t
	if err := unix.Fstatat(parent, filepath.Base(path), &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return fmt.Errorf("measure %s: %w", path, err)
	}
	return u.entry(parent, filepath.Base(path), path, &st, st.Dev, 0)
}

// entry counts dirfd's entry name, described by st, and what is under
// it when it is a directory on device dev.
func (u *usage) entry(dirfd int, name, path string, st *unix.Stat_t, dev uint64, depth int) error {
	// Directories are remembered too: two tops may overlap.
	if st.Nlink > 1 || st.Mode&unix.S_IFMT == unix.S_IFDIR {
		key := [2]uint64{st.Dev, st.Ino}
		if u.seen[key] {
			return nil
		}
		u.seen[key] = true
	}
	u.total += max(st.Blocks*512, minEntry)
	if st.Mode&unix.S_IFMT != unix.S_IFDIR || st.Dev != dev {
		return nil
	}
	if depth >= maxDepth {
		return fmt.Errorf("measure %s: %w (more than %d levels)", path, ErrTooDeep, maxDepth)
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		return nil // gone, or swapped for a link or a file since it was listed
	}
	if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
		return fmt.Errorf("measure %s: %w", path, ErrUnreadable)
	}
	if err != nil {
		return fmt.Errorf("measure %s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	var got unix.Stat_t
	if err := unix.Fstat(fd, &got); err != nil || got.Dev != dev {
		return nil // another file system mounted there meanwhile
	}
	return u.dir(f, fd, path, dev, depth)
}

// dir counts the entries of the open directory f.
func (u *usage) dir(f *os.File, fd int, path string, dev uint64, depth int) error {
	for {
		names, err := f.Readdirnames(1024)
		for _, name := range names {
			var st unix.Stat_t
			if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
				continue // gone since it was listed
			}
			if err := u.entry(fd, name, filepath.Join(path, name), &st, dev, depth+1); err != nil {
				return err
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("measure %s: %w", path, err)
		}
	}
}
