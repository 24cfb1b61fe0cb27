package runner

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// owedJournal is a memJournal that owes the session one answer.
type owedJournal struct {
	*memJournal
	owed      []OwedAnswer
	delivered atomic.Int32
}

func (j *owedJournal) OwedAnswers(context.Context, string) ([]OwedAnswer, error) { return j.owed, nil }
func (j *owedJournal) MarkDelivered(ctx context.Context, _, _ string, e Event) error {
	j.delivered.Add(1)
	return j.Append(ctx, e)
}

// TestOwedAnswersRunIdlesOut: a run started to deliver owed answers whose
// transcript already holds them sends no turn and reads no line, and must
// still end after its idle timeout like any other. Before, its loop armed
// the idle timer only on a line or a command: such a run lived 40 minutes
// past a 60 s idle timeout, holding a slot.
func TestOwedAnswersRunIdlesOut(t *testing.T) {
	const sid = "5f0c2a9e-3b1d-4c7a-9e2f-1a2b3c4d5e6f"
	dir := t.TempDir()
	proj := filepath.Join(dir, "projects", "-work-ws")
	if err := os.MkdirAll(proj, 0o700); err != nil {
		t.Fatal(err)
	}
	line := `{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_1","type":"tool_result","content":"Exit code 137","is_error":true}]}}`
	if err := os.WriteFile(filepath.Join(proj, sid+".jsonl"), []byte(line+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	synctest.Test(t, func(t *testing.T) {
		j := &owedJournal{memJournal: &memJournal{}, owed: []OwedAnswer{{ID: "in_1", Kind: KindPermission, Status: "answered",
			Payload: []byte(`{"tool_name":"Bash","tool_use_id":"toolu_1","input":{"command":"make deploy"}}`), Answer: []byte(`{"by":"ann"}`)}}}
		ctx, cancel := context.WithCancel(context.Background())
		var ended atomic.Bool
		r := &Run{spec: Spec{SessionID: "s", Resume: true, ConfigDir: dir, ClaudeSessionID: sid},
			journal: j, pub: make(chanPublisher, 64), log: slog.New(slog.DiscardHandler), idleTimeout: time.Minute,
			cmds: make(chan command), lines: make(chan Line), writes: make(chan []byte, 8), exited: make(chan exitInfo, 1),
			done: make(chan struct{}), pending: map[string]pendingAsk{}, plans: map[string]string{},
			proc: &process{stderr: &tailBuffer{max: 1024}}, onEnd: func() {},
			cancel: func() { ended.Store(true); cancel() }}
		go r.loop(ctx)
		synctest.Wait()
		if j.delivered.Load() != 1 {
			t.Fatalf("the owed answer was marked delivered %d times, want once (its transcript holds it)", j.delivered.Load())
		}
		time.Sleep(time.Minute + time.Second)
		synctest.Wait()
		if !ended.Load() {
			t.Errorf("the run that delivered owed answers did not end after its idle timeout")
		}
		cancel()
		r.exited <- exitInfo{code: 0, reason: "test over"}
		<-r.done
	})
}
