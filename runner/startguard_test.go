package runner

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"parley/askuser"
	"parley/runner/fakeapi"
)

// A message whose run cannot start because the session's StartGuard is
// held (a member merges its worktree) does not wait with its sender: it is
// kept in the queue at once, even if the sender leaves, and a second message
// joins it there. One start waits for the guard; once the guard is free
// the run starts and both reach the model once, in order.
func TestStartGuardKeepsWorkQueued(t *testing.T) {
	fake := fakeapi.Serve(t, fakeapi.Scenario{{Text: "one"}, {Text: "two"}})
	queue := &memQueue{items: map[int64]QueuedWork{}}
	var held atomic.Bool
	held.Store(true)
	free := make(chan struct{})
	var waits, refusals atomic.Int32
	guard := func(ctx context.Context, _ string, wait bool) (func(), error) {
		if held.Load() {
			if !wait {
				refusals.Add(1)
				return nil, ErrStartHeld
			}
			waits.Add(1)
			select {
			case <-free:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return func() {}, nil
	}
	pub := make(chanPublisher, 1<<16)
	sup := NewSupervisor(context.Background(), Deps{
		Config:  Config{ClaudeBin: fakeapi.ClaudeBin(t), SelfExe: "/bin/false", Env: append(os.Environ(), fake.Env(t.TempDir())...)},
		Journal: &memJournal{}, Publisher: pub, Broker: askuser.NewBroker(),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), RuntimeDir: t.TempDir(), QueueStore: queue, StartGuard: guard,
	})
	t.Cleanup(sup.Shutdown)
	start := With(testOptions(t, "http://127.0.0.1:9/ask"))

	for _, text := range []string{"first", "second"} {
		ctx, cancel := context.WithCancel(t.Context())
		sent := make(chan error, 1)
		go func() { sent <- sup.Prompt(ctx, "s1", start, text, Author{Name: "Ann"}) }()
		select {
		case err := <-sent:
			if err != nil {
				t.Fatalf("prompt %q: %v", text, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("prompt %q waited for the guard with its sender", text)
		}
		cancel() // the sender's page closes: nothing is lost
	}
	if k := queue.kept(); len(k) != 2 || queue.items[k[0]].Text != "first" || queue.items[k[1]].Text != "second" {
		t.Fatalf("kept %v (%+v) while the guard is held, want both prompts in order", k, queue.items)
	}
	for deadline := time.Now().Add(10 * time.Second); waits.Load() == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no start waits for the guard")
		}
	}
	time.Sleep(200 * time.Millisecond)
	if w, r := waits.Load(), refusals.Load(); w != 1 || r != 1 {
		t.Fatalf("%d starts wait for the guard and %d were refused, want 1 and 1: the second message joins the first's start", w, r)
	}
	if _, live := sup.Live("s1"); live || len(fake.Requests()) != 0 {
		t.Fatalf("a run is live (%v) or the model was asked (%d requests) while the guard is held", live, len(fake.Requests()))
	}

	held.Store(false)
	close(free)
	var convo string
	for deadline := time.Now().Add(90 * time.Second); !strings.Contains(convo, "second"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the model never got the second message; last conversation %q", convo)
		}
		if rs := fake.Requests(); len(rs) > 0 {
			convo = userText(rs[len(rs)-1])
		}
	}
	if i, j := strings.Index(convo, "first"), strings.Index(convo, "second"); i < 0 || i > j ||
		strings.Count(convo, "first") != 1 || strings.Count(convo, "second") != 1 {
		t.Fatalf("the conversation the model got: %q; want first, then second, once each", convo)
	}
	for deadline := time.Now().Add(30 * time.Second); len(queue.kept()) > 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("kept %v after both were sent, want nothing", queue.kept())
		}
	}
}

// userText joins the text of a request's user messages.
func userText(r fakeapi.Request) string {
	var b strings.Builder
	for _, m := range r.Messages {
		if m.Role != "user" {
			continue
		}
		for _, c := range m.Content {
			b.WriteString(c.Text)
			b.WriteByte('\n')
		}
	}
	return b.String()
}
