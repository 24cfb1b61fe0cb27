package audit

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
)

// WitnessFile is the witness's file name in Parley's data directory.
const WitnessFile = "audit-head"

// witnessMaxBytes is the size past which the witness file is compacted to
// its newest line (about 12,000 lines).
const witnessMaxBytes = 1 << 20

// Head is a point on the chain as a witness saw it: a row's id (its seq)
// and its hash. From names where the head came from, for messages.
type Head struct {
	Seq  int64
	Hash []byte
	From string
}

// Witness keeps the chain's head outside Postgres: an append-only file of
// "SEQ HASH" lines, each written and fsynced after the row it names was
// committed. Someone who can change the database but not this file cannot
// cut rows from the end of the trail, or rewrite them, unseen: Verify
// checks that every head it is given is on the chain.
//
// Note never waits for the disk; Run writes the newest noted head, one
// write and fsync per batch, so a burst of appends costs one fsync. A
// head noted but not yet written when Parley dies only leaves the witness
// behind the chain, which Verify accepts.
type Witness struct {
	path     string
	log      *slog.Logger
	kick     chan struct{}
	mu       sync.Mutex
	pending  Head // the newest head noted
	written  int64
	f        *os.File
	fi       os.FileInfo // f's, to see it replaced
	size     int64
	maxBytes int64 // compact past this size
}

// OpenWitness opens (creating it, mode 0600) the witness file at path.
func OpenWitness(path string, log *slog.Logger) (*Witness, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("audit witness directory: %w", err)
	}
	w := &Witness{path: path, log: log, kick: make(chan struct{}, 1), maxBytes: witnessMaxBytes}
	if err := w.open(); err != nil {
		return nil, err
	}
	return w, nil
}

// open opens (creating it) the file at w.path for appending, in place of
// the one w held.
func (w *Witness) open() error {
	f, err := os.OpenFile(w.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("open the audit witness: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("stat the audit witness: %w", err)
	}
	if w.f != nil {
		w.f.Close()
	}
	w.f, w.fi, w.size = f, fi, fi.Size()
	return nil
}

// follow reopens the file when the one at w.path is no longer the one w
// holds: another replica sharing the data directory compacted it, or an
// operator moved it aside. Writing on to the old one would witness nothing.
func (w *Witness) follow() error {
	if fi, err := os.Stat(w.path); err == nil && os.SameFile(fi, w.fi) {
		return nil
	}
	return w.open()
}

// Note takes r, a committed row, as the chain's head if it is the newest
// noted. It never blocks (store.Store.OnAuditAppend calls it).
func (w *Witness) Note(r Row) {
	w.mu.Lock()
	if r.ID > w.pending.Seq {
		w.pending = Head{Seq: r.ID, Hash: bytes.Clone(r.Hash), From: w.path}
	}
	w.mu.Unlock()
	select {
	case w.kick <- struct{}{}:
	default: // a write is due already; it takes the newest head
	}
}

// Run writes each new head until ctx ends, then the last one, and closes
// the file. A failed write is logged, not fatal: the trail goes on in
// Postgres, with a witness behind it.
func (w *Witness) Run(ctx context.Context) error {
	defer w.f.Close()
	for {
		select {
		case <-w.kick:
			w.flush()
		case <-ctx.Done():
			w.flush()
			return nil
		}
	}
}

// flush writes the newest noted head if it is not written yet, and logs it
// so a log shipper keeps a witness off this host too.
func (w *Witness) flush() {
	w.mu.Lock()
	h := w.pending
	w.mu.Unlock()
	if h.Seq <= w.written {
		return
	}
	if err := w.Write(h); err != nil {
		w.log.Error("audit trail: the witness of its head was not written", "seq", h.Seq, "err", err)
		return
	}
	w.written = h.Seq
	w.log.Info("audit trail head", "seq", h.Seq, "hash", hex.EncodeToString(h.Hash))
}

// Write appends h to the file and fsyncs it, compacting the file when it
// has grown past witnessMaxBytes. Run calls it; it is not for use beside
// a running Run.
func (w *Witness) Write(h Head) error {
	if err := w.follow(); err != nil {
		return err
	}
	n, err := writeHead(w.f, h)
	if err != nil {
		return fmt.Errorf("write the audit witness: %w", err)
	}
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("sync the audit witness: %w", err)
	}
	if w.size += int64(n); w.size > w.maxBytes {
		return w.compact()
	}
	return nil
}
