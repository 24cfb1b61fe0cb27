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

// projectStore opens a fresh database with one project of alice's.
func projectStore(t *testing.T) (*store.Store, store.Project) {
	t.Helper()
	st, err := store.Open(t.Context(), pgtest.New(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	u, err := st.CreateUser(t.Context(), "alice@example.com", "alice", "x", true)
	if err != nil {
		t.Fatal(err)
	}
	p, err := st.CreateProject(t.Context(), "p", u.ID)
	if err != nil {
		t.Fatal(err)
	}
	return st, p
}

// gatedPublisher holds the events of one session until open is closed.
type gatedPublisher struct {
	recordingPublisher
	held string
	open chan struct{}
}

func (p *gatedPublisher) Publish(e runner.Event) {
	if e.SessionID == p.held {
		<-p.open
	}
	p.recordingPublisher.Publish(e)
}

// TestEventsOfOneSessionWaitForNoOther: showing a session's announced
// events never holds up the LISTEN goroutine, nor another session's
// events: while one session's are stuck (a slow read, a busy hub), the
// next notification is taken at once and the other session's events are
// shown; the stuck session's later batches wait for its first and are
// shown after it, in order, read once.
func TestEventsOfOneSessionWaitForNoOther(t *testing.T) {
	ctx := t.Context()
	st, p := projectStore(t)
	var ids []string
	for _, title := range []string{"stuck", "other"} {
		sess, err := st.CreateSession(ctx, p.ID, title, "alice")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, sess.ID)
		var evs []store.Event
		for seq := int64(1); seq <= 4; seq++ {
			evs = append(evs, store.Event{SessionID: sess.ID, Seq: seq, Type: "prompt", Payload: []byte(`{"text":"hi"}`), CreatedAt: time.Now()})
		}
		if err := st.AppendEvents(ctx, evs); err != nil {
			t.Fatal(err)
		}
	}
	stuck, other := ids[0], ids[1]
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	sup := runner.NewSupervisor(context.Background(), runner.Deps{Publisher: nopPublisher{}, Broker: askuser.NewBroker(), Log: log, RuntimeDir: t.TempDir()})
	t.Cleanup(sup.Shutdown)
	pub := &gatedPublisher{held: stuck, open: make(chan struct{})}
	n := New(Config{TTL: time.Minute, DataDir: t.TempDir()}, Deps{Store: st, Supervisor: sup, Publisher: pub, Log: log,
		Local: watchedLocal{session: true}})
	taken := make(chan struct{})
	go func() {
		n.eventsWritten(stuck + " 1 1 r")
		n.eventsWritten(stuck + " 2 3 r")
		n.eventsWritten(other + " 1 4 r")
		n.eventsWritten(stuck + " 4 4 r")
		close(taken)
	}()
	select {
	case <-taken:
	case <-time.After(5 * time.Second):
		t.Fatal("the notifications waited for a session whose events are stuck")
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		pub.mu.Lock()
		shown := len(pub.seqs)
		pub.mu.Unlock()
		if shown == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the other session's events were not shown while one session's were stuck (%d shown)", shown)
		}
	}
	close(pub.open)
	n.wg.Wait()
	if got := fmt.Sprint(pub.seqs); got != "[1 2 3 4 1 2 3 4]" {
		t.Fatalf("shown %s, want the other session's 1..4, then the stuck one's 1..4 in order", got)
	}
}

// TestEventsReadOnlyWhereWatched: the events another replica wrote are
// read from the log and shown here while something here watches the
// session (a page, an MCP client); where only an inbox of its project is
// open, only its asks are; a replica where nothing watches either reads
// nothing of them.
func TestEventsReadOnlyWhereWatched(t *testing.T) {
	ctx := t.Context()
	st, p := projectStore(t)
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
		n.wg.Wait() // the session's feed has shown what it read
		if got := fmt.Sprint(pub.seqs); got != c.want {
			t.Errorf("session watched here %v, its asks %v: seqs %s shown, want %s", c.local.session, c.local.asks, got, c.want)
		}
	}
}
