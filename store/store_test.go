package store_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"

	"parley/store"
	"parley/store/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// open returns a store on a fresh, migrated database, closed when t ends.
func open(t *testing.T) *store.Store {
	t.Helper()
	s, err := store.Open(t.Context(), pgtest.New(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// newSession creates a project and a session in it.
func newSession(t *testing.T, s *store.Store) store.Session {
	t.Helper()
	p, err := s.EnsureDefaultProject(t.Context(), "default", "/tmp/ws")
	if err != nil {
		t.Fatal(err)
	}
	sess, err := s.CreateSession(t.Context(), p.ID, "a title", "alice")
	if err != nil {
		t.Fatal(err)
	}
	return sess
}

func TestEnsureDefaultProjectIdempotent(t *testing.T) {
	s := open(t)
	ctx := t.Context()
	first, err := s.EnsureDefaultProject(ctx, "default", "/srv/ws")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	got := make([]store.Project, 5)
	errs := make([]error, 5)
	for i := range got {
		wg.Go(func() { got[i], errs[i] = s.EnsureDefaultProject(ctx, "other", "/elsewhere") })
	}
	wg.Wait()
	for i := range got {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if diff := cmp.Diff(first, got[i]); diff != "" {
			t.Errorf("call %d: project differs (-first +got):\n%s", i, diff)
		}
	}
	if first.Name != "default" || first.Workspace != "/srv/ws" {
		t.Errorf("got %+v, want name default, workspace /srv/ws", first)
	}
	p, err := s.GetProject(ctx, first.ID)
	if err != nil || p.ID != first.ID {
		t.Errorf("GetProject(%d) = %+v, %v", first.ID, p, err)
	}
	if _, err := s.GetProject(ctx, first.ID+100); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetProject(missing) error = %v, want ErrNotFound", err)
	}
}

func TestSessions(t *testing.T) {
	s := open(t)
	ctx := t.Context()
	a := newSession(t, s)
	b := newSession(t, s)
	if a.Status != "idle" || a.ClaudeStarted || a.ID == a.ClaudeSessionID || a.CreatedBy != "alice" {
		t.Errorf("new session = %+v", a)
	}
	if err := s.MarkClaudeStarted(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.SetSessionStatus(ctx, a.ID, "running"); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := s.AddSessionUsage(ctx, a.ID, 0.25, 3); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.GetSession(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !got.ClaudeStarted || got.Status != "running" || got.TotalCostUSD != 0.5 || got.NumTurns != 6 {
		t.Errorf("updated session = %+v", got)
	}
	if err := s.SetSessionStatus(ctx, a.ID, "bogus"); err == nil {
		t.Error("SetSessionStatus(bogus) succeeded, want a check violation")
	}
	list, err := s.ListSessions(ctx, a.ProjectID)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, x := range list {
		ids = append(ids, x.ID)
	}
	if diff := cmp.Diff([]string{a.ID, b.ID}, ids); diff != "" {
		t.Errorf("ListSessions order (-want +got):\n%s", diff)
	}
	for _, id := range []string{uuid.NewString(), "not-a-uuid"} {
		if _, err := s.GetSession(ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("GetSession(%q) error = %v, want ErrNotFound", id, err)
		}
	}
	if err := s.SetSessionStatus(ctx, uuid.NewString(), "idle"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("SetSessionStatus(missing) error = %v, want ErrNotFound", err)
	}
}

func TestEvents(t *testing.T) {
	s := open(t)
	ctx := t.Context()
	sess := newSession(t, s)
	if seq, err := s.LastSeq(ctx, sess.ID); err != nil || seq != 0 {
		t.Fatalf("LastSeq(empty) = %d, %v; want 0", seq, err)
	}
	// Appended out of order on purpose: reads come back by seq.
	for _, seq := range []int64{2, 1, 3, 5, 4} {
		e := store.Event{SessionID: sess.ID, Seq: seq, Type: "t", Payload: json.RawMessage(fmt.Sprintf(`{"n": %d}`, seq))}
		if err := s.AppendEvent(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	err := s.AppendEvent(ctx, store.Event{SessionID: sess.ID, Seq: 3, Type: "dup", Payload: json.RawMessage(`{}`)})
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "23505" {
		t.Errorf("AppendEvent(duplicate seq) error = %v, want unique violation 23505", err)
	}
	if seq, err := s.LastSeq(ctx, sess.ID); err != nil || seq != 5 {
		t.Errorf("LastSeq = %d, %v; want 5", seq, err)
	}
	tests := []struct {
		after int64
		limit int
		want  []int64
	}{
		{0, 0, []int64{1, 2, 3, 4, 5}},
		{2, 0, []int64{3, 4, 5}},
		{0, 2, []int64{1, 2}},
		{3, 10, []int64{4, 5}},
		{5, 0, nil},
	}
	for _, tt := range tests {
		evs, err := s.EventsAfter(ctx, sess.ID, tt.after, tt.limit)
		if err != nil {
			t.Fatal(err)
		}
		var got []int64
		for _, e := range evs {
			got = append(got, e.Seq)
			if want := fmt.Sprintf(`{"n": %d}`, e.Seq); string(e.Payload) != want {
				t.Errorf("event %d payload = %s, want %s", e.Seq, e.Payload, want)
			}
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("EventsAfter(%d, %d) seqs (-want +got):\n%s", tt.after, tt.limit, diff)
		}
	}
}
