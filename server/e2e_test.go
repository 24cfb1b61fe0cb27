package server

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"parley/runner/fakeapi"
	"parley/store"
)

const askTool = "mcp__parley__ask_user"

func colourQuestion(multi bool) map[string]any {
	return map[string]any{
		"question":    "Which colour?",
		"multiSelect": multi,
		"options": []map[string]string{
			{"label": "Blue", "description": "Calm"},
			{"label": "Green"},
			{"label": "Orange", "description": "Loud"},
		},
	}
}

// eventTypes lists the session's event types in seq order.
func (e *env) eventTypes(sessionID string) []string {
	e.t.Helper()
	evs, err := e.st.EventsAfter(e.t.Context(), sessionID, 0, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	var types []string
	for i, ev := range evs {
		if ev.Seq != int64(i+1) {
			e.t.Fatalf("event %d has seq %d: the log has a gap", i, ev.Seq)
		}
		types = append(types, ev.Type)
	}
	return types
}

func count(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

func TestPromptStreamsAndPersists(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "Hello from the fake model, streamed in parts.", Chunks: 5}}, envOptions{})
	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt("say hello")
	got := w.waitFor(60*time.Second, "Done ·")
	for _, want := range []string{"say hello", `hx-swap-oob="beforeend:#m-msg_`, "Hello from the fake model, streamed in parts."} {
		if !strings.Contains(got, want) {
			t.Errorf("frames lack %q", want)
		}
	}
	types := e.eventTypes(s.ID)
	for _, want := range []string{"run_started", "prompt", "system", "stream_event", "assistant", "result"} {
		if count(types, want) == 0 {
			t.Errorf("event log lacks %q: %v", want, types)
		}
	}
	if got := e.fake.Requests()[0].LastUserText(); got != "say hello" {
		t.Errorf("model received %q, want the prompt", got)
	}
	sess, err := e.st.GetSession(t.Context(), s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !sess.ClaudeStarted || sess.NumTurns != 1 || sess.TotalCostUSD <= 0 || sess.Status != "completed" {
		t.Errorf("session after the turn = %+v; want claude started, turns counted, completed", sess)
	}
}

func TestAskUserAnsweredFromPage(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{
		{Text: "Let me ask.", ToolName: askTool, ToolInput: colourQuestion(false)},
		{Text: "You chose: " + fakeapi.ToolResultPlaceholder},
	}, envOptions{})
	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt("pick a colour")
	in := e.waitInput(w, s.ID)

	// A second tab opened now sees the pending card, answerable.
	w2 := e.dial(s.ID, 0)
	w2.waitFor(30*time.Second, "Which colour?", `value="`+in.ID+`"`, `type="radio"`, "Calm")

	w2.send(map[string]any{"action": "answer", "input_id": in.ID, "choice": "Blue"})
	text, isErr := e.lastToolResult(2)
	if text != "User selected: Blue" || isErr {
		t.Errorf("model received %q (error %v), want %q", text, isErr, "User selected: Blue")
	}
	for _, tab := range []*ws{w, w2} {
		tab.waitFor(60*time.Second, "You answered: Blue", "You chose: User selected: Blue", "Done ·")
	}
	// A second answer changes nothing and says why.
	w.send(map[string]any{"action": "answer", "input_id": in.ID, "choice": "Green"})
	w.waitFor(30*time.Second, "This question was already answered.")
	got, err := e.st.GetInput(t.Context(), in.ID)
	if err != nil {
		t.Fatal(err)
	}
	var a struct{ Replies []struct{ Selected []string } }
	_ = json.Unmarshal(got.Answer, &a)
	if got.Status != "answered" || len(a.Replies) != 1 || len(a.Replies[0].Selected) != 1 || a.Replies[0].Selected[0] != "Blue" {
		t.Errorf("stored input = %s %s, want answered Blue", got.Status, got.Answer)
	}
}

func TestAskUserMultiSelectAndFreeText(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{
		{ToolName: askTool, ToolInput: colourQuestion(true)},
		{Text: "Noted."},
	}, envOptions{})
	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt("pick colours")
	in := e.waitInput(w, s.ID)
	w.send(map[string]any{"action": "answer", "input_id": in.ID, "choice": []string{"Blue", "Orange"}, "other": "and a bit of grey"})
	text, isErr := e.lastToolResult(2)
	want := "User selected: Blue, Orange\nUser also wrote: and a bit of grey"
	if text != want || isErr {
		t.Errorf("model received %q (error %v), want %q", text, isErr, want)
	}
	w.waitFor(60*time.Second, "You answered: Blue, Orange, and a bit of grey")
}

func TestAskUserInvalidAnswerIsRefused(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{
		{ToolName: askTool, ToolInput: colourQuestion(false)},
		{Text: "Noted."},
	}, envOptions{})
	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt("pick")
	in := e.waitInput(w, s.ID)
	w.send(map[string]any{"action": "answer", "input_id": in.ID, "choice": []string{"Blue", "Green"}})
	w.waitFor(30*time.Second, "This question takes one option.")
	w.send(map[string]any{"action": "answer", "input_id": in.ID, "choice": "Purple"})
	w.waitFor(30*time.Second, "&#34;Purple&#34; is not one of the options.")
	w.send(map[string]any{"action": "answer", "input_id": in.ID})
	w.waitFor(30*time.Second, "Choose an option or write an answer.")
	// Still pending, still answerable.
	w.send(map[string]any{"action": "answer", "input_id": in.ID, "other": "none of them"})
	if text, _ := e.lastToolResult(2); text != "User answered: none of them" {
		t.Errorf("model received %q", text)
	}
}

func TestAskUserTimesOut(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{
		{ToolName: askTool, ToolInput: map[string]any{"question": "Anyone there?"}},
		{Text: "Proceeding."},
	}, envOptions{askTimeout: 2 * time.Second})
	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt("ask and wait")
	in := e.waitInput(w, s.ID)
	text, isErr := e.lastToolResult(2)
	// The CLI appends a schema hint to error results of deferred MCP tools
	// the model called without loading them first, as the fake model does.
	want := "User did not respond within the timeout period. Proceeding with your best judgment."
	if !strings.HasPrefix(text, want) || !isErr {
		t.Errorf("model received %q (error %v), want the timeout error %q", text, isErr, want)
	}
	w.waitFor(30*time.Second, "Question timed out")
	got, err := e.st.GetInput(t.Context(), in.ID)
	if err != nil || got.Status != "timed_out" {
		t.Errorf("input status = %q, %v; want timed_out", got.Status, err)
	}
}

func TestStopMidTurnThenPromptAgain(t *testing.T) {
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	e := newEnv(t, fakeapi.Scenario{
		{Text: "Working on a long answer", Hold: hold},
		{Text: "Second turn answered."},
	}, envOptions{})
	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt("start something long")
	w.waitFor(60*time.Second, "Working on a long answer")
	w.send(map[string]any{"action": "stop"})
	w.waitFor(60*time.Second, "Stopped by you", "Stopped ·")
	w.prompt("and now?")
	w.waitFor(60*time.Second, "Second turn answered.")
	types := e.eventTypes(s.ID)
	if n := count(types, "run_started"); n != 1 {
		t.Errorf("%d processes started, want 1 (the process survives a stop): %v", n, types)
	}
	if n := count(types, "run_ended"); n != 0 {
		t.Errorf("the process ended after a stop: %v", types)
	}
}

func TestStopCancelsPendingAsk(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{
		{ToolName: askTool, ToolInput: map[string]any{"question": "Wait for me?"}},
		{Text: "After the stop."},
	}, envOptions{})
	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt("ask")
	in := e.waitInput(w, s.ID)
	w.send(map[string]any{"action": "stop"})
	w.waitFor(60*time.Second, "Question cancelled: the run was stopped")
	got, err := e.st.GetInput(t.Context(), in.ID)
	if err != nil || got.Status != "cancelled" {
		t.Errorf("input status = %q, %v; want cancelled", got.Status, err)
	}
}

// A conversation the CLI never saved cannot be resumed ("No conversation
// found"): Parley starts a fresh one and sends the lost turn again, so the
// message still reaches Claude.
func TestFailedResumeStartsFreshConversation(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "Fresh start, message received."}}, envOptions{})
	s := e.newSession()
	if err := e.st.MarkClaudeStarted(t.Context(), s.ID); err != nil {
		t.Fatal(err)
	}
	w := e.dial(s.ID, 0)
	w.prompt("are you there?")
	w.waitFor(60*time.Second, "Claude could not resume the earlier conversation", "Fresh start, message received.")
	if got := e.fake.Requests()[0].LastUserText(); got != "are you there?" {
		t.Errorf("the fresh conversation received %q, want the lost prompt", got)
	}
	after, err := e.st.GetSession(t.Context(), s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if after.ClaudeSessionID == s.ClaudeSessionID || !after.ClaudeStarted {
		t.Errorf("session after = %+v; want a new, started claude session id", after)
	}
	if n := count(e.eventTypes(s.ID), "prompt"); n != 1 {
		t.Errorf("%d prompt events; the re-sent turn must not be shown twice", n)
	}
}

// Archiving a session ends its process; deleting a project ends the
// processes of all its sessions, archived ones included.
func TestArchiveAndDeleteEndProcesses(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "one"}, {Text: "two"}}, envOptions{quiet: true})
	owner := e.member("owner@example.com", "Olga", roleOwner)
	archived, kept := e.newSession(), e.newSession()
	for _, s := range []store.Session{archived, kept} {
		w := e.dial(s.ID, 0)
		w.prompt("hello")
		w.waitFor(60*time.Second, "Done ·")
	}
	if resp := e.postAs(owner, "/sessions/"+archived.ID+"/archive", url.Values{"archived": {"1"}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("archive: %d", resp.StatusCode)
	}
	if _, ok := e.sup.Live(archived.ID); ok {
		t.Error("the archived session still has a live process")
	}
	if _, ok := e.sup.Live(kept.ID); !ok {
		t.Fatal("archiving one session ended another's process")
	}
	p, err := e.st.GetProject(t.Context(), e.project.ID)
	if err != nil {
		t.Fatal(err)
	}
	path := "/projects/" + strconv.FormatInt(p.ID, 10) + "/delete"
	if resp := e.postAs(owner, path, url.Values{"confirm": {p.Name}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("delete: %d", resp.StatusCode)
	}
	if _, ok := e.sup.Live(kept.ID); ok {
		t.Error("a session of the deleted project still has a live process")
	}
}
