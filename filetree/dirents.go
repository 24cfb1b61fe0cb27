package filetree

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"
)

// dirents reads a directory's entries with the kind its file system
// keeps beside each name (d_type), so that a page need not describe every
// name to know where it falls: a folder comes before anything else.
type dirents struct {
	fd       int
	buf      []byte
	pos, end int
}

func newDirents(fd int) *dirents { return &dirents{fd: fd, buf: make([]byte, 32<<10)} }

// next is the next name and its d_type (unix.DT_UNKNOWN when the file
// system keeps none); ok is false at the end. "." and ".." are skipped.
func (d *dirents) next() (name string, typ uint8, ok bool, err error) {
	for {
		if d.pos >= d.end {
			n, err := unix.Getdents(d.fd, d.buf)
			if err != nil {
				return "", 0, false, fmt.Errorf("getdents: %w", err)
			}
			if n <= 0 {
				return "", 0, false, nil
			}
			d.pos, d.end = 0, n
		}
		// struct linux_dirent64: ino u64, off s64, reclen u16, type u8, name.
		rec := d.buf[d.pos:d.end]
		if len(rec) < 19 {
			return "", 0, false, fmt.Errorf("getdents: a short record")
		}
		reclen := int(binary.NativeEndian.Uint16(rec[16:18]))
		if reclen < 19 || reclen > len(rec) {
			return "", 0, false, fmt.Errorf("getdents: a record of %d bytes", reclen)
		}
		d.pos += reclen
		raw := rec[19:reclen]
		if i := bytes.IndexByte(raw, 0); i >= 0 {
			raw = raw[:i]
		}
		if name := string(raw); name != "." && name != ".." {
			return name, rec[18], true, nil
		}
	}
}
