package runner

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"parley/safefile"
	"parley/streamjson"
)

// danglingPrimeFile is a real transcript, as the CLI wrote it in
// server.TestAttackFailedPrimeNeverResumed: one turn, then a prime turn
// killed before its answer (uuid danglingPrimeUUID).
const (
	danglingPrimeFile = "testdata/dangling_prime.jsonl"
	danglingPrimeUUID = "3f94c004-e73c-42f0-9948-4190d0f908d2"
	danglingPrimeTurn = 26 // lines of the turn before the prime
)

// writeLongTranscript writes a transcript of about size bytes under a new
// config dir: the real turn of danglingPrimeFile again and again, then the
// whole file, so that it ends with the dangling prime.
func writeLongTranscript(tb testing.TB, id string, size int) string {
	tb.Helper()
	real, err := os.ReadFile(danglingPrimeFile)
	if err != nil {
		tb.Fatal(err)
	}
	lines := bytes.SplitAfter(real, []byte("\n"))
	turn := bytes.Join(lines[:danglingPrimeTurn], nil)
	var b bytes.Buffer
	for b.Len()+len(real) < size {
		b.Write(turn)
	}
	b.Write(real)
	return writeTranscript(tb, id, b.Bytes())
}

// writeTranscript writes data as the transcript of the CLI session id
// under a new config dir, which it returns.
func writeTranscript(tb testing.TB, id string, data []byte) string {
	tb.Helper()
	dir := tb.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "projects", "-w"), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "projects", "-w", id+".jsonl"), data, 0o644); err != nil {
		tb.Fatal(err)
	}
	return dir
}

// BenchmarkDanglingPrime is the search a --resume start makes before
// anything else (runner/unprime.go), on a 50 MiB transcript that ends with
// a dangling prime: "tail" as it is, "whole" as it was (every line read).
func BenchmarkDanglingPrime(b *testing.B) {
	const id = "0b0e5a7c-1d2e-4f60-8a9b-0c1d2e3f4a5b"
	dir := writeLongTranscript(b, id, 50<<20)
	b.Run("tail", func(b *testing.B) {
		for b.Loop() {
			if got := danglingPrime(dir, id); got != danglingPrimeUUID {
				b.Fatalf("danglingPrime = %q, want %q", got, danglingPrimeUUID)
			}
		}
	})
	b.Run("whole", func(b *testing.B) {
		for b.Loop() {
			f, err := safefile.OpenGlob(dir, streamjson.TranscriptGlob(id))
			if err != nil {
				b.Fatal(err)
			}
			got := danglingPrimeWhole(f)
			f.Close()
			if got != danglingPrimeUUID {
				b.Fatalf("danglingPrimeWhole = %q, want %q", got, danglingPrimeUUID)
			}
		}
	})
}
