// Package safefile reads files that someone else controls — a workspace's
// CLAUDE.md, written by whatever Claude ran there — without following a
// symlink, without blocking on a FIFO or device, and without reading more
// than a bound.
package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// Errors a refused file is reported with; test them with errors.Is.
var (
	ErrSymlink    = errors.New("is a symbolic link")
	ErrNotRegular = errors.New("is not a regular file")
	ErrTooLarge   = errors.New("is too large")
)

// Read returns the content of the regular file at path, which must be no
// larger than max bytes. A missing file is fs.ErrNotExist; a symlink,
// anything but a regular file, or a larger file is refused with one of the
// errors above, and nothing of it is read.
func Read(path string, max int64) ([]byte, error) {
	// O_NOFOLLOW: a symlink as the last component fails with ELOOP instead
	// of being followed. O_NONBLOCK: opening a FIFO does not wait for a
	// writer (the fstat below then refuses it).
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	return read(f, err, path, max)
}

// ReadIn is Read of name under root: resolving name never leaves root
// (os.Root), and its last component is not followed either.
func ReadIn(root *os.Root, name string, max int64) ([]byte, error) {
	// A link is refused as Read refuses it, wherever it leads (os.Root
	// alone would refuse only one leading out, with another error).
	if fi, err := root.Lstat(name); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return nil, fmt.Errorf("%s %w", name, ErrSymlink)
	}
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	return read(f, err, name, max)
}

// read checks and reads f, opened as path (err: the open's error).
func read(f *os.File, err error, path string, max int64) ([]byte, error) {
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("%s %w", path, ErrSymlink)
		}
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s %w (%s)", path, ErrNotRegular, kind(fi.Mode()))
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("%s %w (%d bytes, the limit is %d)", path, ErrTooLarge, fi.Size(), max)
	}
	// The size may grow after the stat: read one byte more than max to see it.
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s %w (over %d bytes)", path, ErrTooLarge, max)
	}
	return b, nil
}

// Refused reports whether err is one of the refusals of Read.
func Refused(err error) bool {
	return errors.Is(err, ErrSymlink) || errors.Is(err, ErrNotRegular) || errors.Is(err, ErrTooLarge)
}

func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeDevice != 0, m&fs.ModeCharDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return m.Type().String()
}
