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

// watchedLocal is a replica's browsers and clients, watching the session
// or its project's asks as it says.
type watchedLocal struct {
	noLocal
	session, asks bool
}

func (l watchedLocal) Watching(string, int64) (bool, bool) { return l.session, l.asks }

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
// read from the log and shown here while something here watches the
// session (a page, an MCP client); where only an inbox of its project is
// open, only its asks are; a replica where nothing watches either reads
// nothing of them.
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
	for seq, typ := range []string{"", "prompt", runner.TypeInputRequested, "stream_event", runner.TypeInputResolved} {
		if seq > 0 {
			evs = append(evs, store.Event{SessionID: sess.ID, Seq: int64(seq), Type: typ, Payload: []byte(`{"text":"hi"}`), CreatedAt: time.Now()})
		}
	}
	if err := st.AppendEvents(ctx, evs); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	sup := runner.NewSupervisor(context.Background(), runner.Deps{Publisher: nopPublisher{}, Broker: askuser.NewBroker(), Log: log, RuntimeDir: t.TempDir()})
	t.Cleanup(sup.Shutdown)
	for _, c := range []struct {
		local watchedLocal
		want  string
	}{
		{watchedLocal{}, "[]"},
		{watchedLocal{asks: true}, "[2 4]"},
		{watchedLocal{session: true}, "[1 2 3 4]"},
		{watchedLocal{session: true, asks: true}, "[1 2 3 4]"},
	} {
		pub := &recordingPublisher{}
		n := New(Config{TTL: time.Minute, DataDir: t.TempDir()}, Deps{Store: st, Supervisor: sup, Publisher: pub, Log: log, Local: c.local})
		n.eventsWritten(fmt.Sprintf("%s 1 4 other-replica", sess.ID))
		if got := fmt.Sprint(pub.seqs); got != c.want {
			t.Errorf("session watched here %v, its asks %v: seqs %s shown, want %s", c.local.session, c.local.asks, got, c.want)
		}
	}
}
