package runner

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"parley/runner/fakeapi"
)

// A prompt sent while a turn runs, measured with claude 2.1.328 against
// fakeapi (TestSecondPromptMidTurn):
//   - while a tool call blocks (here a Bash permission ask; an ask_user
//     call is the same: the turn goes on after a tool result), the CLI
//     folds the prompt into the running turn: the model request after the
//     tool result carries it, as a last "system" message "The user sent a
//     new message while you were working:\n<text>…", and the CLI prints
//     ONE result for both prompts;
//   - while the model streams a reply that ends the turn (no tool), it
//     runs the prompt as a turn of its own after the first: two results;
//   - between turns: two results.
// Without --replay-user-messages stdout says nothing of the fold: the
// tool_result `user` line is the same either way. With it, the CLI echoes
// each stdin prompt as {"type":"user","message":{"role":"user",
// "content":"<text>"},"isReplay":true,…} when it reads it into the
// conversation: at the start of its own turn (after system/init), or, when
// folded, right after the tool result it joins, before the result. So a
// result after which no written prompt is left unechoed ends every turn.
// Before the fix the folded case left the session "running" after the
// only result, and marked every later prompt of the process "queued".

// foldCase sends "second" at some moment of the turn "first" started.
type foldCase struct {
	name  string
	steps fakeapi.Scenario
	// during sends "second" (send) at its moment of the first turn.
	during func(t *testing.T, fake *fakeapi.Server, pub chanPublisher, send func(string), answer func(Event))
	// results is how many results the CLI prints for the two prompts;
	// folded says whether the first turn's requests carry "second".
	results int
	folded  bool
}

func TestSecondPromptMidTurn(t *testing.T) {
	cases := []foldCase{
		{"tool blocks", fakeapi.Scenario{
			{Text: "Let me touch.", ToolName: "Bash", ToolInput: map[string]any{"command": "touch x"}},
			{Text: "A done"}, {Text: "C done"}},
			func(t *testing.T, _ *fakeapi.Server, pub chanPublisher, send func(string), answer func(Event)) {
				req := waitType(t, pub, TypeInputRequested)
				send("second")
				answer(req)
			}, 1, true},
		{"model streams", fakeapi.Scenario{
			{Text: "one two three four five", Chunks: 5, ChunkDelay: 400 * time.Millisecond},
			{Text: "B done"}, {Text: "C done"}},
			func(t *testing.T, fake *fakeapi.Server, _ chanPublisher, send func(string), _ func(Event)) {
				ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
				defer cancel()
				if err := fake.WaitRequests(ctx, 1); err != nil {
					t.Fatal(err)
				}
				send("second")
			}, 2, false},
		{"between turns", fakeapi.Scenario{{Text: "A done"}, {Text: "B done"}, {Text: "C done"}},
			func(t *testing.T, _ *fakeapi.Server, pub chanPublisher, send func(string), _ func(Event)) {
				waitType(t, pub, "result")
				send("second")
			}, 2, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { checkSecondPrompt(t, c) })
	}
}

func checkSecondPrompt(t *testing.T, c foldCase) {
	fake := fakeapi.Serve(t, c.steps)
	sup, j, pub := newTestSupervisor(t, fakeapi.ClaudeBin(t), fake.Env(t.TempDir()))
	o := testOptions(t, "")
	send := func(s string) {
		if err := sup.Prompt(t.Context(), "s1", With(o), s, Author{Name: "you"}); err != nil {
			t.Fatal(err)
		}
	}
	answer := func(req Event) {
		var p AskPayload
		_ = json.Unmarshal(req.Payload, &p)
		if err := sup.Answer(t.Context(), "s1", With(o), p.InputID, Response{By: "you"}); err != nil {
			t.Fatal(err)
		}
	}
	send("first")
	c.during(t, fake, pub, send, answer)
	waitResults(t, j, c.results)
	time.Sleep(2 * time.Second) // no other result comes
	if n := countType(j, "result"); n != c.results {
		t.Fatalf("the CLI printed %d results for two prompts; want %d", n, c.results)
	}
	reqs := fake.Requests()
	if len(reqs) < 2 {
		t.Fatalf("%d model requests; want 2", len(reqs))
	}
	raw, _ := json.Marshal(reqs[1].Messages[len(reqs[1].Messages)-1])
	if folded := strings.Contains(string(raw), "The user sent a new message while you were working:\\nsecond"); folded != c.folded {
		t.Errorf("second prompt folded into the first turn's request: %v, want %v; last message %s", folded, c.folded, raw)
	}
	if got := j.lastStatus(); got != StatusCompleted {
		t.Errorf("after the last result the session is %q; want completed", got)
	}
	for _, e := range j.snapshot() {
		if e.Type == "user" && strings.Contains(string(e.Payload), `"isReplay"`) {
			t.Errorf("a replayed prompt was recorded: %s", e.Payload)
		}
	}
	send("third")
	waitResults(t, j, c.results+1)
	for _, e := range j.snapshot() {
		if e.Type == TypePrompt && strings.Contains(string(e.Payload), `"third"`) && strings.Contains(string(e.Payload), `"queued":true`) {
			t.Errorf("a prompt sent after the last result is marked queued: %s", e.Payload)
		}
	}
	if got := j.lastStatus(); got != StatusCompleted {
		t.Errorf("after the third prompt's result the session is %q; want completed", got)
	}
}

// waitResults waits until the journal holds n results.
func waitResults(t *testing.T, j *memJournal, n int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for countType(j, "result") < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d results after a minute; want %d (events %v)", countType(j, "result"), n, j.types())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func countType(j *memJournal, typ string) (n int) {
	for _, e := range j.snapshot() {
		if e.Type == typ {
			n++
		}
	}
	return n
}

func (j *memJournal) snapshot() []Event {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]Event(nil), j.events...)
}
