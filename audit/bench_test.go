package audit_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"

	"parley/audit"
	"parley/store"
	"parley/store/pgtest"
)

func benchLog(b *testing.B) *audit.Log {
	b.Helper()
	st, err := store.Open(b.Context(), pgtest.New(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(st.Close)
	return audit.New(st)
}

var benchEntry = audit.Entry{ActorID: 1, ActorName: "Ann", From: "192.0.2.7", Surface: audit.Page, Action: audit.AskAnswer,
	ProjectID: 1, SessionID: "5cb25783-e72a-4600-ae00-f5d6c3911594", Target: "c8a0c748-e967-4422-b651-6271f3856159",
	Detail: map[string]any{"decision": "allow", "tool": "Bash", "kind": "permission"}}

// BenchmarkRecord is one append: lock, last hash, insert, commit.
func BenchmarkRecord(b *testing.B) {
	l := benchLog(b)
	for b.Loop() {
		if err := l.Record(b.Context(), benchEntry); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRecordParallel is appends from many goroutines at once: the
// advisory lock serializes them.
func BenchmarkRecordParallel(b *testing.B) {
	l := benchLog(b)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := l.Record(b.Context(), benchEntry); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkVerify10k walks a chain of 10,000 rows.
func BenchmarkVerify10k(b *testing.B) {
	l := benchLog(b)
	for range 10_000 {
		if err := l.Record(b.Context(), benchEntry); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		if res, err := l.Verify(b.Context()); err != nil || !res.OK() || res.Rows != 10_000 {
			b.Fatalf("%v, %v", res, err)
		}
	}
}

// witnessed has l's store witnessed as `parley serve` does, until the
// benchmark ends.
func witnessed(b *testing.B, st *store.Store) {
	b.Helper()
	w, err := audit.OpenWitness(filepath.Join(b.TempDir(), audit.WitnessFile), slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	st.OnAuditAppend(w.Note)
	ctx, cancel := context.WithCancel(b.Context())
	var wg sync.WaitGroup
	wg.Go(func() { _ = w.Run(ctx) })
	b.Cleanup(func() { cancel(); wg.Wait() })
}

// BenchmarkRecordWitnessed is BenchmarkRecord with the head witnessed in
// a file: the fsync runs beside the appends, not in them.
func BenchmarkRecordWitnessed(b *testing.B) {
	st, err := store.Open(b.Context(), pgtest.New(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(st.Close)
	witnessed(b, st)
	l := audit.New(st)
	for b.Loop() {
		if err := l.Record(b.Context(), benchEntry); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRecordParallelWitnessed is BenchmarkRecordParallel witnessed.
func BenchmarkRecordParallelWitnessed(b *testing.B) {
	st, err := store.Open(b.Context(), pgtest.New(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(st.Close)
	witnessed(b, st)
	l := audit.New(st)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := l.Record(b.Context(), benchEntry); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkWitnessWrite is one witness line written and fsynced: what a
// synchronous witness would add to every append.
func BenchmarkWitnessWrite(b *testing.B) {
	w, err := audit.OpenWitness(filepath.Join(b.TempDir(), audit.WitnessFile), slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	h := audit.Head{Hash: make([]byte, 32)}
	for b.Loop() {
		h.Seq++
		if err := w.Write(h); err != nil {
			b.Fatal(err)
		}
	}
}
