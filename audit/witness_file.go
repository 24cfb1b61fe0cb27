package audit

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ReadWitness returns the newest head in the witness file at path (the
// line with the greatest seq; several replicas sharing a data directory
// append to one file). A line that does not parse, such as one torn by a
// crash mid-write, is skipped. A file without a line gives a zero Head.
func ReadWitness(path string) (Head, error) {
	f, err := os.Open(path)
	if err != nil {
		return Head{}, fmt.Errorf("read the audit witness: %w", err)
	}
	defer f.Close()
	newest := Head{From: path}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if h, err := parseLine(sc.Text(), " "); err == nil && h.Seq > newest.Seq {
			newest.Seq, newest.Hash = h.Seq, h.Hash
		}
	}
	if err := sc.Err(); err != nil {
		return Head{}, fmt.Errorf("read the audit witness %s: %w", path, err)
	}
	return newest, nil
}

// ParseHead reads a head given as SEQ:HASH (the hash in hex), as the log
// line "audit trail head" gives them.
func ParseHead(s string) (Head, error) {
	h, err := parseLine(strings.TrimSpace(s), ":")
	if err != nil {
		return h, fmt.Errorf("%q is not a head: give SEQ:HASH, as the log's \"audit trail head\" line has them (seq=12 hash=ab12… is 12:ab12…)", s)
	}
	h.From = "--head"
	return h, nil
}

// writeHead writes h as a line of the witness file, "SEQ HASH" (parseLine
// reads it back).
func writeHead(w io.Writer, h Head) (int, error) { return fmt.Fprintf(w, "%d %x\n", h.Seq, h.Hash) }

// parseLine reads "SEQ<sep>HASH", HASH 64 hex digits.
func parseLine(s, sep string) (Head, error) {
	seq, hash, ok := strings.Cut(s, sep)
	n, err := strconv.ParseInt(seq, 10, 64)
	if !ok || err != nil || n <= 0 || len(hash) != 64 {
		return Head{}, errors.New("malformed head")
	}
	b, err := hex.DecodeString(hash)
	if err != nil {
		return Head{}, errors.New("malformed head")
	}
	return Head{Seq: n, Hash: b}, nil
}

// compact replaces the witness file with its newest line: a new file
// written, fsynced and renamed over it, then opened. Another process
// appending meanwhile may lose its line, which only leaves the witness
// behind.
func (w *Witness) compact() error {
	h, err := ReadWitness(w.path)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(w.path), WitnessFile+".*")
	if err != nil {
		return fmt.Errorf("compact the audit witness: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the rename, nothing is there
	if _, err := writeHead(tmp, h); err != nil {
		tmp.Close()
		return fmt.Errorf("compact the audit witness: %w", err)
	}
	if err := errors.Join(tmp.Sync(), tmp.Close(), os.Rename(tmp.Name(), w.path), syncDir(filepath.Dir(w.path))); err != nil {
		return fmt.Errorf("compact the audit witness: %w", err)
	}
	return w.open()
}

// syncDir fsyncs a directory, so a rename in it survives a crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// AppendWitness appends h to the witness file at path, which must exist,
// and fsyncs it: a command beside the server (`parley user add`) witnesses
// the rows it recorded. It never creates nor compacts the file (only
// `parley serve` does, as the user the server runs as). The command may
// run as root: a link or anything but a regular file there is refused,
// never followed (the account the server runs as could have put it there).
func AppendWitness(path string, h Head) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return fmt.Errorf("open the audit witness: %w", err)
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return fmt.Errorf("open the audit witness: %s is not a regular file", path)
	}
	_, err = writeHead(f, h)
	if err = errors.Join(err, f.Sync(), f.Close()); err != nil {
		return fmt.Errorf("write the audit witness: %w", err)
	}
	return nil
}
