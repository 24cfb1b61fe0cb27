package quota

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func TestWatcherStopsAProjectOverItsQuota(t *testing.T) {
	dir := t.TempDir()
	over := make(chan Status, 10)
	w := New(Config{Every: 20 * time.Millisecond,
		Project: func(context.Context, int64) (Project, error) {
			return Project{Dirs: []string{dir}, Quota: 1 << 20}, nil
		},
		Live: func() []int64 { return []int64{5} },
		Over: func(_ context.Context, id int64, st Status) { over <- st }})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- w.Run(ctx) }()
	defer func() { cancel(); <-done }()
	if st, err := w.Check(t.Context(), 5); err != nil || st.Over() {
		t.Fatalf("an empty project: %+v, %v", st, err)
	}
	write(t, filepath.Join(dir, "big"), 2<<20)
	select {
	case st := <-over:
		if !strings.Contains(st.Sentence(), "more than its disk quota of 1 MiB") {
			t.Errorf("sentence %q", st.Sentence())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the project over its quota was not stopped")
	}
	if st, _ := w.Check(t.Context(), 5); !st.Over() {
		t.Errorf("Check after the stop: %+v, want over", st)
	}
	os.Remove(filepath.Join(dir, "big"))
	if st, _ := w.Check(t.Context(), 5); st.Over() {
		t.Errorf("Check once the file is gone: %+v, want under", st)
	}
}

func TestBytes(t *testing.T) {
	for n, want := range map[int64]string{512: "512 bytes", 50 << 20: "50 MiB", 61<<20 + 300<<10: "61.3 MiB", 10 << 30: "10 GiB"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestWatcherCatchesAFastWriterNearItsQuota(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		over := make(chan Status, 10)
		w := New(Config{
			Project: func(context.Context, int64) (Project, error) {
				return Project{Dirs: []string{dir}, Quota: 20 << 20}, nil
			},
			Live: func() []int64 { return []int64{1} },
			Over: func(_ context.Context, _ int64, st Status) { over <- st },
		})
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		if _, err := w.Check(ctx, 1); err != nil { // the run's start
			t.Fatal(err)
		}
		ran, wrote := make(chan struct{}), make(chan struct{})
		go func() { defer close(ran); _ = w.Run(ctx) }()
		go func() { // the run: 1 MiB every 100 ms
			defer close(wrote)
			for i := 0; ctx.Err() == nil && i < 200; i++ {
				write(t, filepath.Join(dir, "f"+strconv.Itoa(i)), 1<<20)
				time.Sleep(100 * time.Millisecond)
			}
		}()
		start := time.Now()
		st := <-over
		cancel()
		<-ran
		<-wrote
		t.Logf("stopped at %s after %s", Bytes(st.Used), st.At.Sub(start))
		if st.Used > 40<<20 {
			t.Errorf("stopped at %s; want near the 20 MiB quota", Bytes(st.Used))
		}
	})
}

func TestPeriodKeepsMeasuringToATenthOfACPU(t *testing.T) {
	w := New(Config{})
	p := &watched{st: Status{Took: time.Millisecond}}
	if got := w.period(p); got != time.Second {
		t.Errorf("a small tree: every %s, want 1s", got)
	}
	p.st.Took = 100 * time.Millisecond
	w.live.Store(5)
	if got := w.period(p); got != 5*time.Second {
		t.Errorf("a 100 ms walk with 5 projects live: every %s, want 5s", got)
	}
}
