package fdtree

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Create makes d's entry name a new regular file of mode perm (less the
// umask) and opens it for writing. Anything already there, a link
// included, is an error (fs.ErrExist): O_CREAT|O_EXCL follows no link and
// never opens an existing file.
func (d *Dir) Create(name string, perm os.FileMode) (*os.File, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	path := filepath.Join(d.path, name)
	fd, err := unix.Openat(d.fd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
	if err != nil {
		return nil, &os.PathError{Op: "create", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}
