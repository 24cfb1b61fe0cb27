package transcript

import (
	"log/slog"
	"sync"
	"testing"

	"parley/store"
)

// TestReconcileConcurrentAddsOnce: a takeover's recovery and a run's start
// may reconcile one session at the same moment on one replica. Together
// they add what one reconcile alone adds. Before, each read the log, then
// one appended and the other, reading the last seq after that append,
// added the same steps again (CI's TestFaultKillMidStream: "the log holds
// 8 steps, the transcript 4").
func TestReconcileConcurrentAddsOnce(t *testing.T) {
	st, first, cfg := setup(t)
	lines := fixtureLines(t)
	rec := New(st, &published{}, slog.New(slog.DiscardHandler))
	// added reconciles a new session whose run was lost after its first
	// step, n times at once, and returns how many events they added.
	added := func(n int) int {
		s, err := st.CreateSession(t.Context(), first.ProjectID, "t", "x")
		if err != nil {
			t.Fatal(err)
		}
		appendLog(t, st, s.ID, store.Event{Type: "run_started", Payload: []byte(`{"pid":1}`)},
			store.Event{Type: "prompt", Payload: []byte(`{"text":"go"}`)}, stdout(lines[0]))
		before := len(logOf(t, st, s.ID))
		sess := Session{ID: s.ID, ProjectID: s.ProjectID, ClaudeSessionID: fixtureSession, ConfigDir: cfg, Status: "ended"}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range n {
			wg.Go(func() {
				<-start
				if _, err := rec.Reconcile(t.Context(), sess); err != nil {
					t.Errorf("reconcile: %v", err)
				}
			})
		}
		close(start)
		wg.Wait()
		return len(logOf(t, st, s.ID)) - before
	}
	want := added(1)
	if want < 5 {
		t.Fatalf("one reconcile added %d events, want the notice, 3 steps and run_ended at least", want)
	}
	for round := range 20 {
		if got := added(4); got != want {
			t.Fatalf("round %d: four reconciles at once added %d events, one alone adds %d", round, got, want)
		}
	}
}
