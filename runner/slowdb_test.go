package runner

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"parley/askuser"
	"parley/runner/fakeapi"
)

// sessionJournals is a journal per session whose log reads for one
// session hang until released: a database stuck on that session.
type sessionJournals struct {
	mu      sync.Mutex
	by      map[string]*memJournal
	slow    string
	entered chan struct{} // closed when a read of the slow session hangs
	release chan struct{}
	once    sync.Once
}

func (j *sessionJournals) of(id string) *memJournal {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.by[id] == nil {
		j.by[id] = &memJournal{}
	}
	return j.by[id]
}

func (j *sessionJournals) LastSeq(ctx context.Context, id string) (int64, error) {
	if id == j.slow {
		j.once.Do(func() { close(j.entered) })
		select {
		case <-j.release:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	return j.of(id).LastSeq(ctx, id)
}
func (j *sessionJournals) Append(ctx context.Context, e Event) error {
	return j.of(e.SessionID).Append(ctx, e)
}
func (j *sessionJournals) OpenInput(ctx context.Context, in Input, e Event) error {
	return j.of(e.SessionID).OpenInput(ctx, in, e)
}
func (j *sessionJournals) ResolveInput(ctx context.Context, id, status string, answer json.RawMessage, by string, e Event) error {
	return j.of(e.SessionID).ResolveInput(ctx, id, status, answer, by, e)
}
func (j *sessionJournals) LoadInput(context.Context, string) (Input, error) {
	return Input{}, ErrNotFound
}
func (j *sessionJournals) RunStarted(context.Context, string, int) (int64, error) { return 1, nil }
func (j *sessionJournals) RunEnded(context.Context, int64, int, string) error     { return nil }
func (j *sessionJournals) SessionChanged(ctx context.Context, id string, c SessionChange) error {
	return j.of(id).SessionChanged(ctx, id, c)
}

// A database that hangs on one session's start holds up that session
// only: the supervisor holds no lock across it, so another session's
// prompt starts its run and gets its reply meanwhile, and the supervisor
// answers about the stuck one (Live). Once the database answers, the
// stuck session runs too.
func TestSlowDatabaseHoldsOnlyItsSession(t *testing.T) {
	fake := fakeapi.Serve(t, fakeapi.Scenario{{Text: "fast reply"}, {Text: "slow reply"}})
	j := &sessionJournals{by: map[string]*memJournal{}, slow: "slow", entered: make(chan struct{}), release: make(chan struct{})}
	pub := make(chanPublisher, 1<<16)
	sup := NewSupervisor(context.Background(), Deps{
		Config:  Config{ClaudeBin: fakeapi.ClaudeBin(t), SelfExe: "/bin/false", Env: append(os.Environ(), fake.Env(t.TempDir())...)},
		Journal: j, Publisher: pub, Broker: askuser.NewBroker(),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), RuntimeDir: t.TempDir(),
	})
	t.Cleanup(sup.Shutdown)
	opts := func(id, claudeID string) Starter {
		dir := t.TempDir()
		return With(Options{Spec: Spec{SessionID: id, ClaudeSessionID: claudeID, Workspace: dir, ConfigDir: filepath.Join(dir, "claude")},
			RelayURL: "http://127.0.0.1:9/ask", AskTimeout: time.Minute})
	}
	slowSent := make(chan error, 1)
	go func() {
		slowSent <- sup.Prompt(t.Context(), "slow", opts("slow", "0b9c1f3e-1111-4a57-9d7c-3f6f4a1d2b10"), "hello", Author{Name: "Ann"})
	}()
	select {
	case <-j.entered:
	case <-time.After(30 * time.Second):
		t.Fatal("the slow session's start never read its log")
	}
	answered := make(chan bool, 1)
	go func() { _, live := sup.Live("slow"); answered <- live }()
	select {
	case <-answered:
	case <-time.After(5 * time.Second):
		t.Fatal("the supervisor did not answer Live while one session's start waited for the database")
	}
	if err := sup.Prompt(t.Context(), "fast", opts("fast", "0b9c1f3e-2222-4a57-9d7c-3f6f4a1d2b10"), "hello", Author{Name: "Bob"}); err != nil {
		t.Fatalf("the other session's prompt: %v", err)
	}
	waitResult := func(id string) {
		t.Helper()
		for timeout := time.After(60 * time.Second); ; {
			select {
			case e := <-pub:
				if e.Type == "result" && e.SessionID == id {
					return
				}
			case <-timeout:
				t.Fatalf("no result for session %s", id)
			}
		}
	}
	waitResult("fast")
	if n := len(fake.Requests()); n != 1 {
		t.Fatalf("the model got %d requests while the slow session waited, want the other session's 1", n)
	}
	close(j.release)
	if err := <-slowSent; err != nil {
		t.Fatalf("the slow session's prompt: %v", err)
	}
	waitResult("slow")
}
