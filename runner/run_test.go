package runner

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"parley/askuser"
	"parley/runner/fakeapi"
)

// memJournal is an in-memory Journal: the edge of the runner under test.
type memJournal struct {
	mu     sync.Mutex
	events []Event
	runs   map[int64]string
	// changes are the session changes the run reported, in order.
	changes []SessionChange
	// commitThenFail makes the Append of this event type store the event
	// and still report an error, as an insert whose reply timed out does.
	commitThenFail string
}

func (j *memJournal) Append(_ context.Context, e Event) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if n := len(j.events); n > 0 && j.events[n-1].Seq != e.Seq-1 {
		return errors.New("seq gap or duplicate")
	}
	j.events = append(j.events, e)
	if e.Type == j.commitThenFail {
		j.commitThenFail = ""
		return context.DeadlineExceeded
	}
	return nil
}
func (j *memJournal) LastSeq(context.Context, string) (int64, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.events) == 0 {
		return 0, nil
	}
	return j.events[len(j.events)-1].Seq, nil
}
func (j *memJournal) OpenInput(ctx context.Context, _ Input, e Event) error { return j.Append(ctx, e) }
func (j *memJournal) ResolveInput(ctx context.Context, _, _ string, _ json.RawMessage, _ string, e Event) error {
	return j.Append(ctx, e)
}
func (j *memJournal) LoadInput(context.Context, string) (Input, error)       { return Input{}, ErrNotFound }
func (j *memJournal) RunStarted(context.Context, string, int) (int64, error) { return 1, nil }
func (j *memJournal) RunEnded(_ context.Context, id int64, code int, reason string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.runs == nil {
		j.runs = map[int64]string{}
	}
	j.runs[id] = reason
	return nil
}
func (j *memJournal) SessionChanged(_ context.Context, _ string, c SessionChange) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.changes = append(j.changes, c)
	return nil
}

func (j *memJournal) types() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []string
	for _, e := range j.events {
		out = append(out, e.Type)
	}
	return out
}

// chanPublisher hands every event to a channel.
type chanPublisher chan Event

func (c chanPublisher) Publish(e Event) { c <- e }

func waitType(t *testing.T, c chanPublisher, typ string) Event {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case e := <-c:
			if os.Getenv("PARLEY_TEST_TRACE") != "" {
				t.Logf("event %d %s %.300s", e.Seq, e.Type, e.Payload)
			}
			if e.Type == typ {
				return e
			}
		case <-timeout:
			t.Fatalf("no %s event", typ)
		}
	}
}

func newTestSupervisor(t *testing.T, claude string, env []string) (*Supervisor, *memJournal, chanPublisher) {
	j := &memJournal{}
	pub := make(chanPublisher, 1<<16)
	sup := NewSupervisor(context.Background(), Deps{
		Config:  Config{ClaudeBin: claude, SelfExe: "/bin/false", Env: append(os.Environ(), env...)},
		Journal: j, Publisher: pub, Broker: askuser.NewBroker(),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), RuntimeDir: t.TempDir(),
	})
	t.Cleanup(sup.Shutdown)
	return sup, j, pub
}

func testOptions(t *testing.T, relay string) Options {
	dir := t.TempDir()
	return Options{Spec: Spec{SessionID: "s1", ClaudeSessionID: "5c2f8c1e-8d5e-4a57-9d7c-3f6f4a1d2b10",
		Workspace: dir, ConfigDir: filepath.Join(dir, "claude")}, RelayURL: relay, AskTimeout: time.Minute}
}

func TestRunLifecycle(t *testing.T) {
	fake := fakeapi.Serve(t, fakeapi.Scenario{{Text: "hi"}})
	sup, j, pub := newTestSupervisor(t, fakeapi.ClaudeBin(t), fake.Env(t.TempDir()))
	if err := sup.Prompt(t.Context(), "s1", With(testOptions(t, "http://127.0.0.1:9/ask")), "hello", Author{Name: "you"}); err != nil {
		t.Fatal(err)
	}
	waitType(t, pub, "result")
	r, ok := sup.Live("s1")
	if !ok {
		t.Fatal("no live run after a turn: the process should stay for the next one")
	}
	cfgPath := r.spec.AskConfigPath
	fi, err := os.Stat(cfgPath)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("ask config %s: %v, mode %v; want 0600", cfgPath, err, fi.Mode().Perm())
	}
	pid := r.proc.cmd.Process.Pid
	sup.Shutdown()
	if _, err := os.Stat(cfgPath); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ask config still there after the run ended: %v", err)
	}
	if err := syscall.Kill(-pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("process group %d still exists after shutdown: %v", pid, err)
	}
	select {
	case <-r.finished:
	default:
		t.Error("Shutdown returned before the run's goroutines ended")
	}
	types := j.types()
	if types[0] != TypeRunStarted || types[len(types)-1] != TypeRunEnded {
		t.Errorf("events = %v; want run_started first and run_ended last", types)
	}
	r.Stop() // idempotent
}

// A stand-in CLI that prints what a broken or future CLI might: the runner
// must record every line and carry on.
const badCLI = `#!/bin/sh
read line
echo 'this is not json'
printf '{"type":"user","big":"%s"}\n' "$(head -c 10485760 /dev/zero | tr '\0' 'x')"
echo '{"type":"brand_new_event","n":1}'
echo '{"type":"result","is_error":false,"total_cost_usd":0.5,"num_turns":1}'
read line
`

func TestRunRecordsBadAndHugeOutput(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "claude")
	if err := os.WriteFile(bin, []byte(badCLI), 0o755); err != nil {
		t.Fatal(err)
	}
	sup, j, pub := newTestSupervisor(t, bin, nil)
	if err := sup.Prompt(t.Context(), "s1", With(testOptions(t, "")), "go", Author{Name: "you"}); err != nil {
		t.Fatal(err)
	}
	waitType(t, pub, "result")
	got := strings.Join(j.types(), " ")
	want := "run_started prompt malformed user brand_new_event result"
	if got != want {
		t.Errorf("events = %s, want %s", got, want)
	}
	j.mu.Lock()
	big := len(j.events[3].Payload)
	j.mu.Unlock()
	if big < 10<<20 {
		t.Errorf("the 10 MB line was kept as %d bytes", big)
	}
	if _, ok := sup.Live("s1"); !ok {
		t.Error("the run ended after bad output")
	}
}

func TestRunEndsWhenIdleAndResumes(t *testing.T) {
	fake := fakeapi.Serve(t, fakeapi.Scenario{{Text: "first"}, {Text: "second"}})
	sup, _, pub := newTestSupervisor(t, fakeapi.ClaudeBin(t), fake.Env(t.TempDir()))
	o := testOptions(t, "")
	o.IdleTimeout = 300 * time.Millisecond
	if err := sup.Prompt(t.Context(), "s1", With(o), "one", Author{Name: "you"}); err != nil {
		t.Fatal(err)
	}
	waitType(t, pub, "result")
	ended := waitType(t, pub, TypeRunEnded)
	if !strings.Contains(string(ended.Payload), "stopped by Parley") {
		t.Errorf("run_ended = %s; want it stopped by Parley", ended.Payload)
	}
	// run_ended is published just before the run leaves the supervisor's
	// map; its loop's end (Done) comes after that.
	if r, ok := sup.Live("s1"); ok {
		select {
		case <-r.Done():
		case <-time.After(30 * time.Second):
		}
	}
	if _, ok := sup.Live("s1"); ok {
		t.Fatal("the idle run is still live")
	}
	o.Resume = true
	if err := sup.Prompt(t.Context(), "s1", With(o), "two", Author{Name: "you"}); err != nil {
		t.Fatal(err)
	}
	res := waitType(t, pub, "result")
	if !strings.Contains(string(res.Payload), `"result":"second"`) && !strings.Contains(string(res.Payload), `"result": "second"`) {
		t.Errorf("resumed turn result = %s", res.Payload)
	}
	if got := fake.Requests()[1].Messages; len(got) < 3 {
		t.Errorf("the resumed turn sent %d messages; want the first turn's history too", len(got))
	}
}

// A write that failed after committing must not leave the run's seq behind
// the log: every later event would collide with it.
func TestRunFollowsTheLogAfterAnAmbiguousWrite(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "claude")
	if err := os.WriteFile(bin, []byte(badCLI), 0o755); err != nil {
		t.Fatal(err)
	}
	sup, j, pub := newTestSupervisor(t, bin, nil)
	j.commitThenFail = "brand_new_event"
	if err := sup.Prompt(t.Context(), "s1", With(testOptions(t, "")), "go", Author{Name: "you"}); err != nil {
		t.Fatal(err)
	}
	waitType(t, pub, "result")
	types := j.types()
	if got := types[len(types)-1]; got != "result" {
		t.Errorf("events = %v; the result after the ambiguous write was not stored", types)
	}
}
