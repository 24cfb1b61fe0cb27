package cluster

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"parley/askuser"
	"parley/runner"
	"parley/store"
	"parley/store/pgtest"
)

// watchedLocal is a replica's browsers that watch what watched says.
type watchedLocal struct {
	noLocal
	watched bool
}

func (l watchedLocal) WatchesSession(string, int64) bool { return l.watched }

// recordingPublisher keeps the seqs it was given.
type recordingPublisher struct {
	mu   sync.Mutex
	seqs []int64
}

func (p *recordingPublisher) Publish(e runner.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seqs = append(p.seqs, e.Seq)
}

// TestEventsReadOnlyWhereWatched: the events another replica wrote are
// read from the log and shown here only while something here watches the
// session (a page, an MCP client) or its project's asks (an inbox); a
// replica where nobody does reads nothing of them.
func TestEventsReadOnlyWhereWatched(t *testing.T) {
	ctx := t.Context()
	st, err := store.Open(ctx, pgtest.New(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	u, err := st.CreateUser(ctx, "alice@example.com", "alice", "x", true)
	if err != nil {
		t.Fatal(err)
	}
	p, err := st.CreateProject(ctx, "p", u.ID)
	if err != nil {
		t.Fatal(err)
	}
	sess, err := st.CreateSession(ctx, p.ID, "s", "alice")
	if err != nil {
		t.Fatal(err)
	}
	var evs []store.Event
	for seq := int64(1); seq <= 3; seq++ {
		evs = append(evs, store.Event{SessionID: sess.ID, Seq: seq, Type: "prompt", Payload: []byte(`{"text":"hi"}`), CreatedAt: time.Now()})
	}
	if err := st.AppendEvents(ctx, evs); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	sup := runner.NewSupervisor(context.Background(), runner.Deps{Publisher: nopPublisher{}, Broker: askuser.NewBroker(), Log: log, RuntimeDir: t.TempDir()})
	t.Cleanup(sup.Shutdown)
	for _, watched := range []bool{false, true} {
		pub := &recordingPublisher{}
		n := New(Config{TTL: time.Minute, DataDir: t.TempDir()}, Deps{Store: st, Supervisor: sup, Publisher: pub, Log: log,
			Local: watchedLocal{watched: watched}})
		n.eventsWritten(fmt.Sprintf("%s 1 3 other-replica", sess.ID))
		want := 0
		if watched {
			want = 3
		}
		if len(pub.seqs) != want {
			t.Errorf("watched here %v: %d events shown (%v), want %d", watched, len(pub.seqs), pub.seqs, want)
		}
	}
}
