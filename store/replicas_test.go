package store_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"parley/store"
	"parley/store/pgtest"
)

// twoReplicas opens two stores on the database at url, as two replicas.
func twoReplicas(t *testing.T, url string) (a, b *store.Store) {
	t.Helper()
	for _, s := range []**store.Store{&a, &b} {
		st, err := store.Open(t.Context(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(st.Close)
		*s = st
	}
	return a, b
}

// TestTakeOverOnlyLapsedReplicas has two replicas on one database: B's
// takeover leaves live A's run, ask and lease alone; once A's row lapses,
// B ends A's run, keeps the ask pending with an input_detached event, and
// frees the lease for B.
func TestTakeOverOnlyLapsedReplicas(t *testing.T) {
	url := pgtest.New(t)
	a, b := twoReplicas(t, url)
	for _, s := range []*store.Store{a, b} {
		if _, err := s.Heartbeat(t.Context(), "/data", time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	sess := newSession(t, a)
	if owner, err := a.AcquireLease(t.Context(), sess.ID); err != nil || owner != a.Replica() {
		t.Fatalf("A acquires: owner %q, %v", owner, err)
	}
	runID, err := a.StartRun(t.Context(), sess.ID, 42)
	if err != nil {
		t.Fatal(err)
	}
	in := store.Input{SessionID: sess.ID, RunID: runID, Kind: "permission", Payload: json.RawMessage(`{}`)}
	if err := a.OpenInput(t.Context(), in, store.Event{SessionID: sess.ID, Seq: 1, Type: "input_requested"}); err != nil {
		t.Fatal(err)
	}
	if owner, err := b.AcquireLease(t.Context(), sess.ID); err != nil || owner != a.Replica() {
		t.Fatalf("B acquires while A lives: owner %q, %v; want A", owner, err)
	}
	if dead, n, err := b.TakeOver(t.Context()); err != nil || len(dead) != 0 || n != 0 {
		t.Fatalf("takeover with A live: dead %v, sessions %d, %v", dead, n, err)
	}
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	var open bool
	if err := conn.QueryRow(t.Context(), `SELECT ended_at IS NULL FROM runs WHERE id = $1`, runID).Scan(&open); err != nil || !open {
		t.Fatalf("A's run open = %v, %v; want still open", open, err)
	}
	if _, err := conn.Exec(t.Context(), `UPDATE replicas SET expires_at = now() - interval '1 second' WHERE id = $1`, a.Replica()); err != nil {
		t.Fatal(err)
	}
	dead, n, err := b.TakeOver(t.Context())
	if err != nil || len(dead) != 1 || dead[0] != a.Replica() || n != 1 {
		t.Fatalf("takeover after A lapsed: dead %v, sessions %d, %v; want A, 1", dead, n, err)
	}
	if err := conn.QueryRow(t.Context(), `SELECT ended_at IS NULL FROM runs WHERE id = $1`, runID).Scan(&open); err != nil || open {
		t.Fatalf("A's run open = %v, %v; want ended", open, err)
	}
	pending, err := b.PendingInputs(t.Context(), sess.ID)
	if err != nil || len(pending) != 1 {
		t.Fatalf("pending inputs %v, %v; want the ask still open", pending, err)
	}
	evs, err := b.EventsAfter(t.Context(), sess.ID, 1, 0)
	if err != nil || len(evs) != 1 || evs[0].Type != "input_detached" {
		t.Fatalf("events after the ask: %v, %v; want one input_detached", evs, err)
	}
	if owner, err := b.AcquireLease(t.Context(), sess.ID); err != nil || owner != b.Replica() {
		t.Fatalf("B acquires after the takeover: owner %q, %v; want B", owner, err)
	}
}

// TestPoolSettingsInURLAndReady: pool_max_conns in the URL is a pool
// setting for migrations and the pools alike, and a migrated database is
// ready.
func TestPoolSettingsInURLAndReady(t *testing.T) {
	url := pgtest.New(t)
	if strings.Contains(url, "?") {
		url += "&pool_max_conns=64"
	} else {
		url += "?pool_max_conns=64"
	}
	if err := store.Migrate(url); err != nil {
		t.Fatalf("migrate with pool_max_conns: %v", err)
	}
	s, err := store.Open(t.Context(), url)
	if err != nil {
		t.Fatalf("open with pool_max_conns: %v", err)
	}
	defer s.Close()
	if err := s.Ready(t.Context()); err != nil {
		t.Errorf("ready: %v", err)
	}
}

// TestAppendEventsNotifies: a batch is one statement, one commit and one
// notification naming its first and last seq.
func TestAppendEventsNotifies(t *testing.T) {
	s := open(t)
	sess := newSession(t, s)
	got := make(chan string, 4)
	ready := make(chan struct{})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- s.Listen(ctx, []string{store.EventsChannel}, func() { close(ready) }, func(_, p string) { got <- p })
	}()
	<-ready
	var evs []store.Event
	for i := 1; i <= 3; i++ {
		evs = append(evs, store.Event{SessionID: sess.ID, Seq: int64(i), Type: "stream_event", Payload: json.RawMessage(`{"n":1}`)})
	}
	if err := s.AppendEvents(t.Context(), evs); err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-got:
		if want := sess.ID + " 1 3 parley " + s.Replica(); p != want {
			t.Errorf("notification %q, want %q", p, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no notification")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("listen: %v", err)
	}
	if err := s.AppendEvents(t.Context(), evs[2:]); err == nil {
		t.Error("a taken seq was accepted")
	}
}

// TestTakeOverLockFreedWhenItsHolderStalls: a replica that stalls in the
// middle of its takeover (paused, or cut off from the database) with the
// takeover lock held does not keep the others from taking sessions over:
// its idle transaction's connection is ended, and the lock is free.
func TestTakeOverLockFreedWhenItsHolderStalls(t *testing.T) {
	a, b := twoReplicas(t, pgtest.New(t))
	held, release := make(chan struct{}), make(chan struct{})
	store.SetTakeOverHeld(func(replica string) {
		if replica == a.Replica() {
			close(held)
			<-release // A stalls here, its transaction open and idle
		}
	})
	t.Cleanup(func() { store.SetTakeOverHeld(nil) })
	doneA := make(chan error, 1)
	go func() { _, _, err := a.TakeOver(context.Background()); doneA <- err }()
	<-held
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	start := time.Now()
	if _, _, err := b.TakeOver(ctx); err != nil {
		close(release)
		t.Fatalf("B's takeover behind A's stalled one: %v", err)
	}
	t.Logf("B took over %s after A stalled with the lock", time.Since(start).Round(time.Millisecond))
	close(release)
	if err := <-doneA; err == nil {
		t.Error("A's stalled takeover committed after its connection was ended")
	}
}
