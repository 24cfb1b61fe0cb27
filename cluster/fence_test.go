package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"parley/askuser"
	"parley/runner"
	"parley/runner/fakeapi"
	"parley/store"
	"parley/store/pgtest"
)

// startUnrecorded is a run journal whose RunStarted fails, as when the
// database is away at that very moment: the run lives with id 0. The rest
// of its writes succeed and are dropped (this test looks at fencing only).
type startUnrecorded struct{}

func (startUnrecorded) LastSeq(context.Context, string) (int64, error) { return 0, nil }
func (startUnrecorded) Append(context.Context, runner.Event) error     { return nil }
func (startUnrecorded) OpenInput(context.Context, runner.Input, runner.Event) error {
	return nil
}
func (startUnrecorded) ResolveInput(context.Context, string, string, json.RawMessage, string, runner.Event) error {
	return nil
}
func (startUnrecorded) LoadInput(context.Context, string) (runner.Input, error) {
	return runner.Input{}, runner.ErrNotFound
}
func (startUnrecorded) RunStarted(context.Context, string, int) (int64, error) {
	return 0, errors.New("database unavailable")
}
func (startUnrecorded) RunEnded(context.Context, int64, int, string) error { return nil }
func (startUnrecorded) SessionChanged(context.Context, string, runner.SessionChange) error {
	return nil
}

type nopPublisher struct{}

func (nopPublisher) Publish(runner.Event) {}

// TestFenceStopsAnUnrecordedRun: a run whose start the log could not
// record has no row a takeover could end. When this replica's heartbeat
// finds its lease had lapsed and another replica took its sessions over
// (which freed the session's lease), that run is fenced too; a run of a
// session whose lease is still this replica's is left alone.
func TestFenceStopsAnUnrecordedRun(t *testing.T) {
	url := pgtest.New(t)
	ctx := t.Context()
	open := func() *store.Store {
		st, err := store.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(st.Close)
		return st
	}
	a, b := open(), open()
	fake := fakeapi.Serve(t, fakeapi.Scenario{
		{Text: "a long reply", Chunks: 600, ChunkDelay: 50 * time.Millisecond},
		{Text: "another long reply", Chunks: 600, ChunkDelay: 50 * time.Millisecond},
	})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	sup := runner.NewSupervisor(context.Background(), runner.Deps{
		Config:  runner.Config{ClaudeBin: fakeapi.ClaudeBin(t), SelfExe: "/bin/false", Env: append(os.Environ(), fake.Env(t.TempDir())...)},
		Journal: startUnrecorded{}, Publisher: nopPublisher{}, Broker: askuser.NewBroker(), Log: log, RuntimeDir: t.TempDir(),
	})
	t.Cleanup(sup.Shutdown)
	const ttl = time.Minute
	n := New(Config{TTL: ttl, DataDir: t.TempDir()}, Deps{Store: a, Supervisor: sup, Publisher: nopPublisher{}, Log: log})
	for _, st := range []*store.Store{a, b} {
		if _, err := st.Heartbeat(ctx, n.cfg.DataDir, ttl); err != nil {
			t.Fatal(err)
		}
	}
	p, err := a.EnsureDefaultProject(ctx, "default", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	start := func(claudeID string) (sessionID string) {
		s, err := a.CreateSession(ctx, p.ID, "a title", "alice")
		if err != nil {
			t.Fatal(err)
		}
		if owner, err := a.AcquireLease(ctx, s.ID); err != nil || owner != a.Replica() {
			t.Fatalf("A acquires: owner %q, %v", owner, err)
		}
		dir := t.TempDir()
		o := runner.Options{Spec: runner.Spec{SessionID: s.ID, ClaudeSessionID: claudeID, Workspace: dir,
			ConfigDir: filepath.Join(dir, "claude")}}
		if err := sup.Prompt(ctx, s.ID, runner.With(o), "hello", runner.Author{Name: "alice"}); err != nil {
			t.Fatal(err)
		}
		r, ok := sup.Live(s.ID)
		if !ok || r.ID() != 0 {
			t.Fatalf("run live %v, id %d; want a live run with no recorded start", ok, r.ID())
		}
		return s.ID
	}
	taken := start("5c2f8c1e-8d5e-4a57-9d7c-3f6f4a1d2b10")
	kept := start("6d3f9d2f-9e6f-4b68-8e8d-4a7f5b2e3c21")
	// A is paused past its lease; B takes its sessions over, freeing the
	// lease of the one session (taken) whose lease was A's; A takes the
	// other's lease again before its heartbeat (as a message for it would).
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `UPDATE replicas SET expires_at = now() - interval '1 second' WHERE id = $1`, a.Replica()); err != nil {
		t.Fatal(err)
	}
	if dead, _, err := b.TakeOver(ctx); err != nil || len(dead) != 1 {
		t.Fatalf("B's takeover: dead %v, %v; want A", dead, err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO session_leases (session_id, replica_id) VALUES ($1, $2)`, kept, a.Replica()); err != nil {
		t.Fatal(err)
	}
	rTaken, _ := sup.Live(taken)
	n.heartbeat(ctx)
	select {
	case <-rTaken.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the run of the session taken over was not stopped")
	}
	if _, ok := sup.Live(kept); !ok {
		t.Error("the run of the session still A's was stopped")
	}
	if !n.LeaseHeld() {
		t.Error("A's lease is not held after the heartbeat that fenced")
	}
}
