package cluster

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"parley/askuser"
	"parley/runner"
	"parley/store"
	"parley/store/pgtest"
)

// TestJoinNeedsTheSharedDataDir: a replica that starts on the database of
// a live replica but not on its data directory (not the same shared
// filesystem) refuses to join, and leaves no row behind; on the same
// directory it joins.
func TestJoinNeedsTheSharedDataDir(t *testing.T) {
	ctx := t.Context()
	url := pgtest.New(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	node := func(dataDir string) (*Node, *store.Store) {
		st, err := store.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(st.Close)
		sup := runner.NewSupervisor(context.Background(), runner.Deps{Publisher: nopPublisher{}, Broker: askuser.NewBroker(), Log: log, RuntimeDir: t.TempDir()})
		t.Cleanup(sup.Shutdown)
		return New(Config{TTL: time.Minute, DataDir: dataDir}, Deps{Store: st, Supervisor: sup, Publisher: nopPublisher{}, Log: log}), st
	}
	shared := t.TempDir()
	a, st := node(shared)
	if err := a.Join(ctx); err != nil {
		t.Fatalf("the first replica: %v", err)
	}
	b, _ := node(t.TempDir())
	err := b.Join(ctx)
	if err == nil || !strings.Contains(err.Error(), "shared filesystem") {
		t.Fatalf("a replica on another data directory joined: %v", err)
	}
	live, err := st.LiveReplicas(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(live) != 1 || live[0] != a.ID() {
		t.Fatalf("live replicas %v, want only the first (%s): the refused one left its row", live, a.ID())
	}
	c, _ := node(shared)
	if err := c.Join(ctx); err != nil {
		t.Fatalf("a replica on the shared data directory: %v", err)
	}
}
