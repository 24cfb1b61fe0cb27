package runner

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// tailBlock is how much of a transcript danglingPrime reads at a time.
// The lines a dangling prime leaves after it (its api-request, a 60 KB
// attachment, bookkeeping) fit in about two.
const tailBlock = 64 << 10

// eachLineBackward calls f with the non-blank lines of the first size
// bytes of r, last first, each with the offset where it starts, until f
// returns false. It splits and bounds lines as safefile.LineReader does
// (streamjson.EachLine): a line ends at "\n", its trailing "\r\n" bytes
// are cut, a line of more than max bytes with its newline is skipped
// without being read, and a last line with no newline (a torn write) is a
// line too. It reads block bytes at a time from the end, plus a line
// that straddles blocks once whole: a search that stops near the end
// reads only the end. f must not keep line after it returns.
func eachLineBackward(r io.ReaderAt, size int64, block, max int, f func(off int64, line []byte) bool) error {
	buf := make([]byte, block)
	end := size // where the current line ends: its "\n", or size
	pos, b := size, buf[:0]
	for pos > 0 {
		n := min(int64(len(buf)), pos)
		pos -= n
		b = buf[:n]
		if err := readFull(r, b, pos); err != nil {
			return err
		}
		for i := len(b) - 1; i >= 0; i-- {
			if b[i] != '\n' {
				continue
			}
			more, err := emitLine(r, b, pos, pos+int64(i)+1, end, size, max, f)
			if err != nil || !more {
				return err
			}
			end = pos + int64(i)
		}
	}
	_, err := emitLine(r, b, pos, 0, end, size, max, f)
	return err
}

// emitLine hands f the line [start, end) of r: from b (the block read at
// pos) when it lies inside it, else read on its own. more is f's answer
// (true for a line skipped as blank or too long).
func emitLine(r io.ReaderAt, b []byte, pos, start, end, size int64, max int, f func(int64, []byte) bool) (more bool, err error) {
	n := end - start
	if end < size {
		n++ // its "\n" counts, as in safefile.LineReader
	}
	if n > int64(max) {
		return true, nil
	}
	var line []byte
	if start >= pos && end <= pos+int64(len(b)) {
		line = b[start-pos : end-pos]
	} else {
		line = make([]byte, end-start)
		if err := readFull(r, line, start); err != nil {
			return false, err
		}
	}
	line = bytes.TrimRight(line, "\r\n")
	if len(bytes.TrimSpace(line)) == 0 {
		return true, nil
	}
	return f(start, line), nil
}

// readFull fills b from r at off. (io.ReaderAt may answer io.EOF with a
// full b at the end of its input.)
func readFull(r io.ReaderAt, b []byte, off int64) error {
	n, err := r.ReadAt(b, off)
	if n == len(b) && (err == nil || errors.Is(err, io.EOF)) {
		return nil
	}
	if err == nil {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("read transcript at %d: %w", off, err)
}
