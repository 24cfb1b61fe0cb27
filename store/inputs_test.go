package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"parley/store"
)

// openInput opens a pending question on sess with its event at seq.
func openInput(t *testing.T, s *store.Store, sess store.Session, runID int64, seq int64) string {
	t.Helper()
	id := uuid.NewString()
	in := store.Input{ID: id, SessionID: sess.ID, RunID: runID, Kind: "question", Payload: json.RawMessage(`{"question":"ok?"}`)}
	e := store.Event{SessionID: sess.ID, Seq: seq, Type: "input_opened", Payload: json.RawMessage(`{"input_id":"` + id + `"}`)}
	if err := s.OpenInput(t.Context(), in, e); err != nil {
		t.Fatal(err)
	}
	return id
}

func TestResolveInputExactlyOnce(t *testing.T) {
	s := open(t)
	ctx := t.Context()
	sess := newSession(t, s)
	runID, err := s.StartRun(ctx, sess.ID, 1234)
	if err != nil {
		t.Fatal(err)
	}
	id := openInput(t, s, sess, runID, 1)
	pending, err := s.PendingInputs(ctx, sess.ID)
	if err != nil || len(pending) != 1 || pending[0].ID != id || pending[0].RunID != runID || pending[0].Answer != nil {
		t.Fatalf("PendingInputs = %+v, %v", pending, err)
	}

	const n = 20
	var wg sync.WaitGroup
	errs := make([]error, n)
	wins := make([]store.Input, n)
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			by := fmt.Sprintf("user%d", i)
			// Every goroutine proposes the same seq: only the winner may append it.
			e := store.Event{SessionID: sess.ID, Seq: 2, Type: "input_resolved", Payload: json.RawMessage(`{"by":"` + by + `"}`)}
			wins[i], errs[i] = s.ResolveInput(ctx, id, "answered", json.RawMessage(`{"selected":["A"]}`), by, e)
		})
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner == -1:
			winner = i
		case err == nil:
			t.Errorf("goroutines %d and %d both resolved the input", winner, i)
		case !errors.Is(err, store.ErrNotPending):
			t.Errorf("goroutine %d: error = %v, want ErrNotPending", i, err)
		}
	}
	if winner == -1 {
		t.Fatal("no goroutine resolved the input")
	}
	got, err := s.GetInput(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	want := wins[winner]
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GetInput differs from ResolveInput's result (-want +got):\n%s", diff)
	}
	if got.Status != "answered" || got.AnsweredBy != fmt.Sprintf("user%d", winner) || got.AnsweredAt == nil ||
		string(got.Answer) != `{"selected": ["A"]}` {
		t.Errorf("resolved input = %+v (answer %s)", got, got.Answer)
	}
	evs, err := s.EventsAfter(ctx, sess.ID, 1, 0)
	if err != nil || len(evs) != 1 || string(evs[0].Payload) != fmt.Sprintf(`{"by": "user%d"}`, winner) {
		t.Errorf("events after the ask = %+v, %v; want the winner's one event", evs, err)
	}
	if pending, _ := s.PendingInputs(ctx, sess.ID); len(pending) != 0 {
		t.Errorf("PendingInputs after resolve = %+v, want none", pending)
	}
	e := store.Event{SessionID: sess.ID, Seq: 3, Type: "x"}
	for _, missing := range []string{uuid.NewString(), "nope"} {
		if _, err := s.ResolveInput(ctx, missing, "answered", nil, "bob", e); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("ResolveInput(%q) error = %v, want ErrNotFound", missing, err)
		}
	}
}

func TestRecoverAfterRestart(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	a, b, c := newSession(t, s), newSession(t, s), newSession(t, s)
	runA, _ := s.StartRun(ctx, a.ID, 10)
	runC, _ := s.StartRun(ctx, c.ID, 11)
	if err := s.EndRun(ctx, runC, 0, "idle"); err != nil {
		t.Fatal(err)
	}
	in1 := openInput(t, s, a, runA, 1)
	in2 := openInput(t, s, a, runA, 2)
	in3 := openInput(t, s, b, 0, 1)
	done := openInput(t, s, b, 0, 2)
	if _, err := s.ResolveInput(ctx, done, "answered", json.RawMessage(`"yes"`), "bob", store.Event{SessionID: b.ID, Seq: 3, Type: "input_resolved"}); err != nil {
		t.Fatal(err)
	}
	s.SetSessionStatus(ctx, a.ID, "waiting")
	s.SetSessionStatus(ctx, b.ID, "running")
	s.SetSessionStatus(ctx, c.ID, "error")

	n, err := s.RecoverAfterRestart(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("detached %d inputs, want 2 (those of the open run)", n)
	}
	// Asks survive a restart: they stay pending, to be answered later.
	for id, want := range map[string]string{in1: "pending", in2: "pending", in3: "pending", done: "answered"} {
		if in, err := s.GetInput(ctx, id); err != nil || in.Status != want {
			t.Errorf("input %s status = %q, %v; want %q", id, in.Status, err, want)
		}
	}
	for _, tt := range []struct {
		sess   store.Session
		status string
		events []string // payloads appended by the recovery
	}{
		{a, "waiting", []string{detachedPayload(in1, in2)}},
		{b, "waiting", nil},
		{c, "error", nil},
	} {
		got, _ := s.GetSession(ctx, tt.sess.ID)
		if got.Status != tt.status {
			t.Errorf("session status = %q, want %q", got.Status, tt.status)
		}
		after := map[string]int64{a.ID: 2, b.ID: 3, c.ID: 0}[tt.sess.ID]
		evs, err := s.EventsAfter(ctx, tt.sess.ID, after, 0)
		if err != nil {
			t.Fatal(err)
		}
		var payloads []string
		for i, e := range evs {
			if e.Type != "input_detached" || e.Seq != after+int64(i)+1 {
				t.Errorf("event %+v, want input_detached at seq %d", e, after+int64(i)+1)
			}
			payloads = append(payloads, string(e.Payload))
		}
		if diff := cmp.Diff(tt.events, payloads); diff != "" {
			t.Errorf("recovery events (-want +got):\n%s", diff)
		}
	}
	if err := s.EndRun(ctx, runA, 0, "late"); err != nil {
		t.Errorf("EndRun of a recovered run: %v", err)
	}
	if err := s.EndRun(ctx, 999999, 0, "x"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("EndRun(missing) error = %v, want ErrNotFound", err)
	}
	if n, err := s.RecoverAfterRestart(ctx); err != nil || n != 0 {
		t.Errorf("second RecoverAfterRestart = %d, %v; want 0", n, err)
	}
}

// detachedPayload is the event payload RecoverAfterRestart writes, as jsonb renders it.
func detachedPayload(ids ...string) string {
	return `{"reason": "Parley restarted", "input_ids": ["` + strings.Join(ids, `", "`) + `"]}`
}
