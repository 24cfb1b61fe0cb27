package safefile

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// OpenGlob opens, for reading, the first file under dir that matches the
// slash-separated pattern (fs.Glob syntax). Resolution stays inside dir
// (os.Root: no symlink or ".." leads out, and dir itself is not followed
// if it is a symlink), the file itself may not be a symlink, and it must
// be a regular file: a FIFO or device is refused without blocking. No
// match is fs.ErrNotExist.
func OpenGlob(dir, pattern string) (*os.File, error) {
	root, err := RootUnder(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	matches, err := fs.Glob(root.FS(), pattern)
	if err != nil {
		return nil, err
	}
	if len(matches) == 0 {
		return nil, fs.ErrNotExist
	}
	f, err := root.OpenFile(filepath.FromSlash(matches[0]), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file", matches[0])
	}
	return f, nil
}

// RootUnder opens dir as an os.Root from its parent, so that dir itself
// is not followed out of its parent if it is a link: nothing opened under
// it leads out of dir.
func RootUnder(dir string) (*os.Root, error) {
	parent, err := os.OpenRoot(filepath.Dir(dir))
	if err != nil {
		return nil, err
	}
	defer parent.Close()
	return parent.OpenRoot(filepath.Base(dir))
}

// ErrLineTooLong is what LineReader.Next returns after skipping a line
// longer than its bound.
var ErrLineTooLong = errors.New("line too long")

// LineReader reads lines of at most a bounded size from a file someone
// else writes: a longer line is skipped, not kept in memory.
type LineReader struct {
	br  *bufio.Reader
	max int
}

// NewLineReader returns a LineReader of r whose lines are at most max bytes.
func NewLineReader(r io.Reader, max int) *LineReader {
	return &LineReader{br: bufio.NewReaderSize(r, 64<<10), max: max}
}

// Next returns the next line without its line ending. After a line longer
// than the bound it returns ErrLineTooLong (reading may go on); at the end
// it returns io.EOF, with the last line if it had no newline.
func (l *LineReader) Next() ([]byte, error) {
	var buf []byte
	for {
		chunk, err := l.br.ReadSlice('\n')
		if len(buf)+len(chunk) > l.max {
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = l.br.ReadSlice('\n')
			}
			if err != nil && err != io.EOF {
				return nil, err
			}
			return nil, ErrLineTooLong
		}
		buf = append(buf, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimRight(buf, "\r\n"), err
	}
}
