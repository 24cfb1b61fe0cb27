package runner

import (
	"context"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"parley/askuser"
	"parley/runner/fakeapi"
)

// tokenGateway is a Gateway that only tracks which tokens are live.
type tokenGateway struct {
	mu   sync.Mutex
	live map[string]bool
}

func (g *tokenGateway) Admit(int64, string, func() string) (string, func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	token := "t" + string(rune('a'+len(g.live)))
	g.live[token] = true
	return token, func() { g.mu.Lock(); delete(g.live, token); g.mu.Unlock() }
}

func (g *tokenGateway) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.live)
}

// TestFenceRevokesTheModelTokenAtOnce: a fenced run's model token is gone
// when Fence returns, before its process has ended, so a model request its
// claude made while the lease was in doubt is refused, never sent.
func TestFenceRevokesTheModelTokenAtOnce(t *testing.T) {
	fake := fakeapi.Serve(t, fakeapi.Scenario{{Text: "a long reply", Chunks: 100, ChunkDelay: 50 * time.Millisecond}})
	gw := &tokenGateway{live: map[string]bool{}}
	sup := NewSupervisor(context.Background(), Deps{
		Config:  Config{ClaudeBin: fakeapi.ClaudeBin(t), SelfExe: "/bin/false", Env: append(os.Environ(), fake.Env(t.TempDir())...), Gateway: gw},
		Journal: &memJournal{}, Publisher: make(chanPublisher, 1<<16), Broker: askuser.NewBroker(),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), RuntimeDir: t.TempDir(),
	})
	t.Cleanup(sup.Shutdown)
	o := testOptions(t, "http://127.0.0.1:9/ask")
	o.ModelURL = fake.URL() // the fake takes any key
	if err := sup.Prompt(t.Context(), "s1", With(o), "hello", Author{Name: "you"}); err != nil {
		t.Fatal(err)
	}
	r, ok := sup.Live("s1")
	if !ok {
		t.Fatal("no live run")
	}
	if n := gw.count(); n != 1 {
		t.Fatalf("%d live tokens, want the run's", n)
	}
	sup.Fence("s1", r.ID())
	if n := gw.count(); n != 0 {
		t.Errorf("%d live tokens right after Fence, want none", n)
	}
	select {
	case <-r.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the fenced run did not end")
	}
}
