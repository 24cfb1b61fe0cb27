package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"parley/store"
	"parley/store/pgtest"
)

func TestUnavailableClassifies(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"untranslatable character (a \\u0000 in jsonb)", &pgconn.PgError{Code: "22P05"}, false},
		{"unique violation", fmt.Errorf("insert: %w", &pgconn.PgError{Code: "23505"}), false},
		{"syntax error", &pgconn.PgError{Code: "42601"}, false},
		{"admin shutdown", &pgconn.PgError{Code: "57P01"}, true},
		{"cannot connect now", &pgconn.PgError{Code: "57P03"}, true},
		{"connection failure", &pgconn.PgError{Code: "08006"}, true},
		{"too many connections", &pgconn.PgError{Code: "53300"}, true},
		{"serialization failure", &pgconn.PgError{Code: "40001"}, true},
		{"cut-off reply", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), true},
		{"timeout", context.DeadlineExceeded, true},
		{"cancelled", context.Canceled, false},
		{"closed pool", errors.New("closed pool"), false},
	} {
		if got := store.Unavailable(tc.err); got != tc.want {
			t.Errorf("%s: Unavailable(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

// TestFaultDatabaseStoppedIsUnavailable stops the test's own Postgres: a
// write then fails as unavailable, through a pool whose connections the
// shutdown ended and through new connections alike; a value Postgres
// refuses is a refusal; after the restart the same pool writes again.
func TestFaultDatabaseStoppedIsUnavailable(t *testing.T) {
	s := open(t)
	sess := newSession(t, s)
	ctx := t.Context()
	ev := func(seq int64, payload string) store.Event {
		return store.Event{SessionID: sess.ID, Seq: seq, Type: "x", Payload: json.RawMessage(payload)}
	}
	if err := s.AppendEvent(ctx, ev(1, `{}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendEvent(ctx, ev(2, `{"a":"\u0000"}`)); err == nil || store.Unavailable(err) {
		t.Errorf("a \\u0000 in jsonb: err = %v; want a refusal", err)
	}
	// The same through a batch, which fails whole.
	if err := s.AppendEvents(ctx, []store.Event{ev(2, `{}`), ev(3, `{"a":"\u0000"}`)}); err == nil || store.Unavailable(err) {
		t.Errorf("a \\u0000 in jsonb in a batch: err = %v; want a refusal", err)
	}
	if last, err := s.LastSeq(ctx, sess.ID); err != nil || last != 1 {
		t.Errorf("after the refused batch the log ends at %d (%v); want 1: nothing of it written", last, err)
	}
	pgtest.Stop(t)
	t.Cleanup(func() { pgtest.Start(t) })
	for i := range 3 { // the pool's old connection, then new ones
		err := s.AppendEvent(ctx, ev(2, `{}`))
		if !store.Unavailable(err) {
			t.Fatalf("write %d with the database stopped: err = %v; want unavailable", i, err)
		}
		if err := s.AppendEvents(ctx, []store.Event{ev(2, `{}`), ev(3, `{}`)}); !store.Unavailable(err) {
			t.Fatalf("batch %d with the database stopped: err = %v; want unavailable", i, err)
		}
	}
	pgtest.Start(t)
	var err error
	for range 3 { // a connection the restart ended may be handed out once
		if err = s.AppendEvent(ctx, ev(2, `{}`)); err == nil || !store.Unavailable(err) {
			break
		}
	}
	if err != nil {
		t.Fatalf("write after the restart: %v", err)
	}
}
