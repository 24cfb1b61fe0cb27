package server

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"parley/askuser"
	"parley/runner"
	"parley/runner/fakeapi"
)

func sizeQuestion() map[string]any {
	return map[string]any{"question": "Which size?", "options": []map[string]string{{"label": "Small"}, {"label": "Large"}}}
}

// deliveries returns the how of each input_delivered event of input id.
func (e *env) deliveries(sessionID, id string) []string {
	e.t.Helper()
	evs, err := e.st.EventsAfter(e.t.Context(), sessionID, 0, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	var hows []string
	for _, ev := range evs {
		var p struct {
			InputID string `json:"input_id"`
			How     string `json:"how"`
		}
		if ev.Type == runner.TypeInputDelivered && json.Unmarshal(ev.Payload, &p) == nil && p.InputID == id {
			hows = append(hows, p.How)
		}
	}
	return hows
}

// wantDelivered checks the log says input id reached Claude once, how, and
// the store owes the session nothing.
func (e *env) wantDelivered(sessionID, id, how string) {
	e.t.Helper()
	if got := e.deliveries(sessionID, id); len(got) != 1 || got[0] != how {
		e.t.Errorf("deliveries of %s = %q, want exactly one %q", id, got, how)
	}
	if owed, err := e.st.UndeliveredInputs(e.t.Context(), sessionID); err != nil || len(owed) != 0 {
		e.t.Errorf("undelivered inputs = %d, %v; want none", len(owed), err)
	}
}

// userMentions counts the user-side blocks of a model request (typed text
// and tool results) that contain s: how many times the model was told it.
func userMentions(r fakeapi.Request, s string) int {
	n := 0
	for _, m := range r.Messages {
		if m.Role != "user" {
			continue
		}
		for _, b := range m.Content {
			if strings.Contains(b.Text, s) || strings.Contains(string(b.Content), s) {
				n++
			}
		}
	}
	return n
}

// TestAnswerDeliveredAsToolResult: on both ask channels (the ask_user relay
// and Claude's own AskUserQuestion over stdin) an answer is marked delivered
// when the CLI prints the tool's result, and the card says so.
func TestAnswerDeliveredAsToolResult(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{
		{ToolName: askTool, ToolInput: colourQuestion(false)},
		{ToolName: "AskUserQuestion", ToolInput: auqInput},
		{Text: "Done: " + fakeapi.ToolResultPlaceholder},
	}, envOptions{quiet: true})
	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt("ask me")
	in := e.waitInput(w, s.ID)
	w.answer(in, map[string]any{"choice": "Blue"})
	w.waitFor(60*time.Second, `innerHTML:#ask-`+in.ID+`-delivery`, deliveredText)
	if got, _ := e.lastToolResult(2); got != "User selected: Blue" {
		t.Errorf("model read %q", got)
	}
	in2 := e.waitInputAfter(s.ID, in.ID)
	w.answer(in2, map[string]any{"decision": "answer", "choice_0": "Blue", "other_0": "", "choice_1": []string{"M"}, "other_1": ""})
	w.waitFor(60*time.Second, "Done: Your questions have been answered")
	e.wantDelivered(s.ID, in.ID, runner.DeliveredToolResult)
	e.wantDelivered(s.ID, in2.ID, runner.DeliveredToolResult)
	e.logDeliveryGap(s.ID)
	// A reloaded page shows the same lines.
	e.dial(s.ID, 0).waitFor(30*time.Second, `hx-swap-oob="innerHTML:#ask-`+in2.ID+`-delivery"`, deliveredText)
}

// TestFaultAnswerSavedThenClaudeKilled: claude (with its ask_user child) is
// frozen while an answer is saved, then SIGKILLed before it could read it.
// The card says the answer is owed, then that it went as a new message;
// the session resumes at once and the model reads the answer exactly once.
// The first ask of the session goes the normal way: "Delivered to Claude".
func TestFaultAnswerSavedThenClaudeKilled(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{
		{Text: "First question.", ToolName: askTool, ToolInput: colourQuestion(false)},
		{Text: "Second question.", ToolName: askTool, ToolInput: sizeQuestion()},
		{Text: "Thanks, carrying on."},
	}, envOptions{quiet: true})
	s := e.newSession()
	ctx := e.browser(t)
	step(t, ctx, "open the session and prompt",
		chromedp.Navigate(e.web.URL+"/sessions/"+s.ID),
		chromedp.WaitVisible(`#prompt`, chromedp.ByID),
		chromedp.SendKeys(`#prompt`, "ask me two things", chromedp.ByID),
		chromedp.Click(`#prompt-form button[type="submit"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`.ask input[value="Blue"]`, chromedp.ByQuery),
	)
	in1 := e.waitInputAfter(s.ID, "")
	step(t, ctx, "answer the first question: delivered as the tool's result",
		chromedp.Click(`.ask input[value="Blue"]`, chromedp.ByQuery),
		jsClick(`#ask-`+in1.ID+` button[data-decision="answer"]`),
		waitText(`ask-`+in1.ID+`-delivery`, deliveredText),
		chromedp.WaitVisible(`.ask input[value="Large"]`, chromedp.ByQuery),
	)
	in2 := e.waitInputAfter(s.ID, in1.ID)
	// --resume needs the CLI's transcript to hold the second call.
	e.waitTranscript(s, e.fake.Requests()[1].ToolUseID)
	pid := e.pidOf(s.ID)
	// Freeze the whole process group (claude and its mcp-askuser child):
	// the answer is saved and written to the relay's socket, but nobody
	// reads it. Then kill the group: the model never got the answer.
	if err := syscall.Kill(-pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	step(t, ctx, "answer the second question while claude is frozen",
		chromedp.Click(`.ask input[value="Large"]`, chromedp.ByQuery),
		jsClick(`#ask-`+in2.ID+` button[data-decision="answer"]`),
		chromedp.WaitVisible(`#ask-`+in2.ID+` .ask-outcome.ask-answered`, chromedp.ByQuery),
	)
	if got := e.deliveries(s.ID, in2.ID); len(got) != 0 {
		t.Fatalf("the answer counts as delivered (%q) while claude is frozen", got)
	}
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The "not delivered yet" line may be replaced within milliseconds by
	// the resumed run's; the log holds both in order.
	step(t, ctx, "the answer goes to Claude as a new message and the session carries on",
		waitText(`ask-`+in2.ID+`-delivery`, newTurnText),
		chromedp.Poll(`document.getElementById("events").innerText.includes("Thanks, carrying on.")`, nil,
			chromedp.WithPollingTimeout(90*time.Second)),
	)
	types := e.eventTypes(s.ID)
	if i, j := indexOf(types, runner.TypeInputUndelivered), lastIndexOf(types, runner.TypeInputDelivered); i < 0 || j < i {
		t.Errorf("log lacks input_undelivered before the last input_delivered: %q", types)
	}
	if n := count(types, "run_started"); n != 2 {
		t.Errorf("%d runs, want 2 (the owed answer resumed the session)", n)
	}
	e.wantDelivered(s.ID, in1.ID, runner.DeliveredToolResult)
	e.wantDelivered(s.ID, in2.ID, runner.DeliveredNewTurn)
	reqs := e.fake.Requests()
	last := reqs[len(reqs)-1]
	if got := userMentions(last, "Large"); got != 1 {
		t.Errorf("the model was told the answer Large %d times, want exactly once; last request:\n%s", got, last.Raw)
	}
	if got := userMentions(last, "User selected: Blue"); got != 1 {
		t.Errorf("the model was told the first answer %d times, want once", got)
	}
	if text := last.LastUserText(); !strings.Contains(text, "Which size?") || !strings.Contains(text, "Large") {
		t.Errorf("the new turn does not quote the question and the answer:\n%s", text)
	}
	step(t, ctx, "reload: the cards still say how each answer went",
		chromedp.Reload(),
		waitText(`ask-`+in1.ID+`-delivery`, deliveredText),
		waitText(`ask-`+in2.ID+`-delivery`, newTurnText),
	)
}

// waitText waits until the element with id shows text.
func waitText(id, text string) chromedp.Action {
	return chromedp.Poll(`(document.getElementById(`+strconv.Quote(id)+`)?.innerText ?? "").includes(`+strconv.Quote(text)+`)`,
		nil, chromedp.WithPollingTimeout(90*time.Second))
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

func lastIndexOf(list []string, s string) int {
	for i := len(list) - 1; i >= 0; i-- {
		if list[i] == s {
			return i
		}
	}
	return -1
}

// TestFaultControlAnswerSavedThenClaudeKilled is the fault on the stdin
// channel: an AskUserQuestion answered while claude is frozen (the
// control_response sits unread in the pipe), then claude is killed. The
// answer reaches the resumed session once, as a new turn.
func TestFaultControlAnswerSavedThenClaudeKilled(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{
		{ToolName: "AskUserQuestion", ToolInput: auqInput},
		{Text: "Noted, carrying on."},
	}, envOptions{quiet: true})
	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt("ask me")
	in := e.waitInput(w, s.ID)
	e.waitTranscript(s, e.fake.Requests()[0].ToolUseID)
	pid := e.pidOf(s.ID)
	if err := syscall.Kill(-pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	w.answer(in, map[string]any{"decision": "answer", "choice_0": "Red", "other_0": "", "choice_1": []string{"L"}, "other_1": ""})
	w.waitFor(60*time.Second, "You answered: Red; L")
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	w.waitFor(90*time.Second, undeliveredText, newTurnText, "Noted, carrying on.")
	e.wantDelivered(s.ID, in.ID, runner.DeliveredNewTurn)
	reqs := e.fake.Requests()
	last := reqs[len(reqs)-1]
	if got := userMentions(last, "Red"); got != 1 {
		t.Errorf("the model was told the answer %d times, want once; last request:\n%s", got, last.Raw)
	}
	if text := last.LastUserText(); !strings.Contains(text, "Which colour?") || !strings.Contains(text, "Red") {
		t.Errorf("the new turn does not quote the question and the answer:\n%s", text)
	}
}

// TestFaultAnswerSavedThenParleyRestarted: the answer is saved while claude
// is frozen, then Parley stops (killing claude) before it is delivered. At
// the next start the session is resumed on its own (as cluster.Node does
// after a crash) and the answer reaches the model once, as a new turn.
func TestFaultAnswerSavedThenParleyRestarted(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{
		{Text: "Let me ask.", ToolName: askTool, ToolInput: colourQuestion(false)},
		{Text: "Thanks, carrying on."},
	}, envOptions{quiet: true})
	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt("pick a colour")
	in := e.waitInput(w, s.ID)
	e.waitTranscript(s, e.fake.Requests()[0].ToolUseID)
	if err := syscall.Kill(-e.pidOf(s.ID), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	w.answer(in, map[string]any{"choice": "Orange"})
	w.waitFor(60*time.Second, "You answered: Orange")
	w2 := e.restart(s.ID)
	owed, err := e.st.SessionsOwedAnswers(t.Context())
	if err != nil || len(owed) != 1 || owed[0] != s.ID {
		t.Fatalf("sessions owed answers after the restart = %q, %v; want this one", owed, err)
	}
	e.sup.DeliverOwed(owed, e.srv.launcher.SessionStarter)
	w2.waitFor(90*time.Second, newTurnText, "Thanks, carrying on.")
	e.wantDelivered(s.ID, in.ID, runner.DeliveredNewTurn)
	reqs := e.fake.Requests()
	if got := userMentions(reqs[len(reqs)-1], "Orange"); got != 1 {
		t.Errorf("the model was told the answer %d times, want once", got)
	}
}

// TestAnswerAskedAgainGetsSavedAnswer: a relay client whose connection
// broke after the answer was saved asks the same call again (same
// tool_use id) while claude still waits: it gets the saved answer at once,
// no second ask opens, and the answer is delivered once, as the tool's
// result.
func TestAnswerAskedAgainGetsSavedAnswer(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{
		{ToolName: askTool, ToolInput: colourQuestion(false)},
		{Text: "You chose: " + fakeapi.ToolResultPlaceholder},
	}, envOptions{quiet: true, askStdio: true})
	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt("pick a colour")
	in := e.waitInput(w, s.ID)
	paths, _ := filepath.Glob(filepath.Join(e.runtimeDir(), "askuser-*.json"))
	if len(paths) != 1 {
		t.Fatalf("ask_user configs = %q, want one", paths)
	}
	cfg, err := askuser.LoadConfig(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	pid := e.pidOf(s.ID)
	if err := syscall.Kill(-pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	w.answer(in, map[string]any{"choice": "Green"})
	w.waitFor(60*time.Second, "You answered: Green")
	f := askuser.Single(askuser.Question{Question: "Which colour?", Options: []askuser.Option{{Label: "Blue"}, {Label: "Green"}}})
	f.ToolUseID = e.fake.Requests()[0].ToolUseID
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	a, err := askuser.NewClient(cfg).Ask(ctx, f)
	if err != nil || a.Status != askuser.StatusAnswered || len(a.Replies) != 1 || a.Replies[0].Selected[0] != "Green" {
		t.Errorf("asking again got %+v, %v; want the saved answer Green", a, err)
	}
	if n := e.inputs(s.ID); n != 1 {
		t.Errorf("%d asks in the session, want 1: asking again opened another", n)
	}
	if err := syscall.Kill(-pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	w.waitFor(60*time.Second, deliveredText, "You chose: User selected: Green")
	e.wantDelivered(s.ID, in.ID, runner.DeliveredToolResult)
	reqs := e.fake.Requests()
	if got := userMentions(reqs[len(reqs)-1], "Green"); got != 1 {
		t.Errorf("the model was told the answer %d times, want once", got)
	}
}

// logDeliveryGap logs, for each answer of the session, the time from the
// answer's event (input_resolved) to its delivery's (input_delivered): how
// long the card waits for the CLI's tool result. A figure, not a check.
func (e *env) logDeliveryGap(sessionID string) {
	e.t.Helper()
	evs, _ := e.st.EventsAfter(e.t.Context(), sessionID, 0, 0)
	resolved := map[string]time.Time{}
	for _, ev := range evs {
		var p struct {
			InputID string `json:"input_id"`
		}
		_ = json.Unmarshal(ev.Payload, &p)
		switch ev.Type {
		case runner.TypeInputResolved:
			resolved[p.InputID] = ev.CreatedAt
		case runner.TypeInputDelivered:
			e.t.Logf("input %s: answer saved → delivered in %s", p.InputID, ev.CreatedAt.Sub(resolved[p.InputID]).Round(time.Millisecond))
		}
	}
}

// TestOwedAnswerTheCLIHadIsNotSentAgain: Parley died after the CLI took an
// answer but before Parley recorded the delivery (simulated by clearing
// it). The next run finds the tool's result in the CLI's transcript, marks
// the answer delivered as the tool's result and sends no new turn.
func TestOwedAnswerTheCLIHadIsNotSentAgain(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{
		{ToolName: askTool, ToolInput: colourQuestion(false)},
		{Text: "You chose: " + fakeapi.ToolResultPlaceholder},
	}, envOptions{quiet: true})
	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt("pick a colour")
	in := e.waitInput(w, s.ID)
	w.answer(in, map[string]any{"choice": "Blue"})
	w.waitFor(60*time.Second, "You chose: User selected: Blue")
	e.waitTranscript(s, "User selected: Blue")
	e.sup.Stop(s.ID)
	var id string
	e.queryRow(`UPDATE inputs SET delivered_at = NULL, delivered_how = NULL WHERE id = $1 RETURNING id::text`, []any{in.ID}, &id)
	requests := len(e.fake.Requests())
	e.sup.DeliverOwed([]string{s.ID}, e.srv.launcher.SessionStarter)
	w.waitFor(60*time.Second, `innerHTML:#ask-`+in.ID+`-delivery`, deliveredText)
	if got := e.deliveries(s.ID, in.ID); len(got) != 2 || got[1] != runner.DeliveredToolResult {
		t.Errorf("deliveries = %q, want the second one as the tool's result too", got)
	}
	if owed, _ := e.st.UndeliveredInputs(t.Context(), s.ID); len(owed) != 0 {
		t.Errorf("%d answers still owed", len(owed))
	}
	if n := count(e.eventTypes(s.ID), "prompt"); n != 1 {
		t.Errorf("%d prompts in the log, want 1: the answer was sent again", n)
	}
	if got := len(e.fake.Requests()); got != requests {
		t.Errorf("the model got %d more requests, want none", got-requests)
	}
}
