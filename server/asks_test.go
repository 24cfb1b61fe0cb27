package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"parley/askuser"
	"parley/runner"
	"parley/runner/fakeapi"
	"parley/runstore"
	"parley/store"
)

// answer sends an answer form for in, as a card's ws-send does.
func (w *ws) answer(in store.Input, fields map[string]any) {
	w.t.Helper()
	m := map[string]any{"action": "answer", "input_id": in.ID}
	for k, v := range fields {
		m[k] = v
	}
	w.send(m)
}

// toolResult waits for the model's request n and returns its tool_result.
func (e *env) wantToolResult(n int, want string, wantErr bool) {
	e.t.Helper()
	got, isErr := e.lastToolResult(n)
	if got != want || isErr != wantErr {
		e.t.Errorf("model received %q (error %v),\nwant %q (error %v)", got, isErr, want, wantErr)
	}
}

// workspace returns the session's project workspace.
func (e *env) workspace(s store.Session) string {
	e.t.Helper()
	o, err := e.srv.runOptions(e.t.Context(), s)
	if err != nil {
		e.t.Fatal(err)
	}
	return o.Workspace
}

// setMode sets the permission mode of the session's project.
func (e *env) setMode(s store.Session, mode string) {
	e.t.Helper()
	p, err := e.st.GetProject(e.t.Context(), s.ProjectID)
	if err != nil {
		e.t.Fatal(err)
	}
	c := p.ProjectSettings
	c.PermissionMode = mode
	if err := e.st.UpdateProjectSettings(e.t.Context(), p.ID, c, p.Workspace); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) inputs(sessionID string) int {
	e.t.Helper()
	var n int
	evs, _ := e.st.EventsAfter(e.t.Context(), sessionID, 0, 0)
	for _, ev := range evs {
		if ev.Type == "input_requested" {
			n++
		}
	}
	return n
}

func bashStep(cmd string) fakeapi.Step {
	return fakeapi.Step{Text: "Running it.", ToolName: "Bash", ToolInput: map[string]any{"command": cmd, "description": "make a file"}}
}

func TestPermissionOutcomes(t *testing.T) {
	tests := []struct {
		name     string
		fields   map[string]any
		want     string
		wantErr  bool
		created  string // file the allowed command makes
		notThere string
		show     string // what the card says afterwards
	}{
		{"allow", map[string]any{"decision": "allow", "command": "touch x"},
			"(Bash completed with no output)", false, "x", "", "Allowed by you"},
		{"deny with reason", map[string]any{"decision": "deny", "reason": "not on this machine"},
			"The user denied permission to use Bash, so the call did not run. Their reason: \u201cnot on this machine\u201d. Do not retry the same call; adapt your approach or ask the user.",
			true, "", "x", "Denied by you: not on this machine"},
		{"edit then allow", map[string]any{"decision": "allow", "command": "touch y"},
			"(Bash completed with no output)", false, "y", "x", "Allowed by you with the command changed to: touch y"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, fakeapi.Scenario{bashStep("touch x"), {Text: "Result: " + fakeapi.ToolResultPlaceholder}}, envOptions{quiet: true})
			s := e.newSession()
			w := e.dial(s.ID, 0)
			w.prompt("make x")
			in := e.waitInput(w, s.ID)
			if in.Kind != "permission" {
				t.Fatalf("input kind %q, want permission", in.Kind)
			}
			w.answer(in, tt.fields)
			e.wantToolResult(2, tt.want, tt.wantErr)
			w.waitFor(60*time.Second, tt.show, "Done ·")
			ws := e.workspace(s)
			if tt.created != "" {
				if _, err := os.Stat(filepath.Join(ws, tt.created)); err != nil {
					t.Errorf("the allowed command did not run: %v", err)
				}
			}
			if tt.notThere != "" {
				if _, err := os.Stat(filepath.Join(ws, tt.notThere)); err == nil {
					t.Errorf("%s exists: a call ran that was not allowed as shown", tt.notThere)
				}
			}
		})
	}
}

func TestPermissionCardShowsInput(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{
		{ToolName: "Bash", ToolInput: map[string]any{"command": "rm -rf build && make <all>"}},
		{Text: "ok"},
	}, envOptions{quiet: true})
	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt("build")
	got := w.waitFor(60*time.Second, `class="ask-code"`)
	for _, want := range []string{"Claude wants to use", "<code>rm -rf build &amp;&amp; make &lt;all&gt;</code>", `name="command"`,
		`data-decision="allow"`, `data-decision="deny"`} {
		if !strings.Contains(got, want) {
			t.Errorf("card lacks %q", want)
		}
	}
}

func TestPermissionAllowAlways(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{bashStep("touch x"), bashStep("touch x"), {Text: "Both done."}}, envOptions{quiet: true})
	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt("make x twice")
	in := e.waitInput(w, s.ID)
	w.answer(in, map[string]any{"decision": "always", "command": "touch x"})
	w.waitFor(60*time.Second, "Allowed by you for the rest of this session", "Both done.")
	e.wantToolResult(3, "(Bash completed with no output)", false)
	if n := e.inputs(s.ID); n != 1 {
		t.Errorf("%d asks, want 1: the second call should not ask again", n)
	}
	// "In this session" only: no rule written to the workspace's settings.
	if b, _ := os.ReadFile(filepath.Join(e.workspace(s), ".claude", "settings.local.json")); strings.Contains(string(b), "touch") {
		t.Errorf("allow-always wrote a rule to the workspace's settings.local.json:\n%s", b)
	}
}

func TestPermissionTimesOut(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{bashStep("touch x"), {Text: "ok"}}, envOptions{quiet: true})
	// The settings page takes 30 s and up; the store takes what a test needs.
	p, err := e.st.GetProject(t.Context(), e.project.ID)
	if err != nil {
		t.Fatal(err)
	}
	p.PermissionTimeoutSeconds = 2
	if err := e.st.UpdateProjectSettings(t.Context(), p.ID, p.ProjectSettings, p.Workspace); err != nil {
		t.Fatal(err)
	}
	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt("make x")
	w.waitFor(60*time.Second, `class="countdown"`)
	e.wantToolResult(2, "Time ran out: nobody answered the request to use Bash within 2 seconds, so it was denied and did not run.", true)
	w.waitFor(30*time.Second, "Time ran out; the request was denied.")
}

func planSteps() fakeapi.Scenario {
	plan := map[string]any{"plan": "# Plan\n\n1. Write **a.txt**\n2. Check it"}
	return fakeapi.Scenario{
		{Text: "Here is my plan.", ToolName: "ExitPlanMode", ToolInput: plan},
		{ToolName: "ExitPlanMode", ToolInput: plan},
		{ToolName: "Write", ToolInput: map[string]any{"file_path": "WORKSPACE/a.txt", "content": "hello\n"}},
		{Text: "Written."},
	}
}

func TestPlanRequestChangesThenApproveAcceptEdits(t *testing.T) {
	sc := planSteps()
	e := newEnv(t, sc, envOptions{quiet: true})
	s := e.newSession()
	e.setMode(s, "plan")
	sc[2].ToolInput.(map[string]any)["file_path"] = filepath.Join(e.workspace(s), "a.txt")
	w := e.dial(s.ID, 0)
	w.prompt("plan it")
	got := w.waitFor(60*time.Second, `data-kind="plan"`, "</h1>")
	if !strings.Contains(got, "<strong>a.txt</strong>") {
		t.Errorf("the plan is not shown as markdown:\n%s", got)
	}
	in := e.waitInputAfter(s.ID, "")
	w.answer(in, map[string]any{"decision": "changes", "reason": "add a test step", "mode": "default"})
	e.wantToolResult(2, "The user asked for changes to the plan: \u201cadd a test step\u201d. Stay in plan mode, revise the plan accordingly and present it again with ExitPlanMode.", true)
	w.waitFor(60*time.Second, "Changes requested by you: add a test step")
	in2 := e.waitInputAfter(s.ID, in.ID)
	w.answer(in2, map[string]any{"decision": "approve", "mode": "acceptEdits", "reason": ""})
	e.wantToolResult(3, "User has approved exiting plan mode. You can now proceed.", false)
	w.waitFor(60*time.Second, "Plan approved by you; Claude accepts edits without asking", "Written.")
	if b, err := os.ReadFile(filepath.Join(e.workspace(s), "a.txt")); err != nil || string(b) != "hello\n" {
		t.Errorf("a.txt = %q, %v; want the edit made without asking", b, err)
	}
	if n := e.inputs(s.ID); n != 2 {
		t.Errorf("%d asks, want 2 (accept edits: the Write was not asked)", n)
	}
}

// waitInputAfter waits for a pending input other than prev.
func (e *env) waitInputAfter(sessionID, prev string) store.Input {
	e.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		ins, err := e.st.PendingInputs(e.t.Context(), sessionID)
		if err != nil {
			e.t.Fatal(err)
		}
		for _, in := range ins {
			if in.ID != prev {
				return in
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	e.t.Fatalf("no new pending input")
	return store.Input{}
}

var auqInput = map[string]any{"questions": []any{
	map[string]any{"question": "Which colour?", "header": "Colour", "multiSelect": false, "options": []any{
		map[string]any{"label": "Blue", "description": "calm"}, map[string]any{"label": "Red", "description": "loud"}}},
	map[string]any{"question": "Which sizes?", "header": "Sizes", "multiSelect": true, "options": []any{
		map[string]any{"label": "S", "description": "small"}, map[string]any{"label": "M", "description": "medium"},
		map[string]any{"label": "L", "description": "large"}}},
}}

func TestAskUserQuestionAnswered(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{ToolName: "AskUserQuestion", ToolInput: auqInput}, {Text: "ok"}}, envOptions{quiet: true})
	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt("ask me")
	got := w.waitFor(60*time.Second, `name="choice_1"`)
	for _, want := range []string{"Which colour?", "Colour", "calm", `type="checkbox"`, `name="other_1"`, "Other"} {
		if !strings.Contains(got, want) {
			t.Errorf("card lacks %q", want)
		}
	}
	in := e.waitInputAfter(s.ID, "")
	w.answer(in, map[string]any{"decision": "answer", "choice_0": "Blue", "other_0": "",
		"choice_1": []string{"S", "L"}, "other_1": "and XL"})
	// With free text among the answers the CLI words it differently.
	e.wantToolResult(2, `The user answered: "Which colour?"="Blue", "Which sizes?"="S, L, and XL". Read the answers carefully — they may request clarification, changes, or that you not proceed — and follow what they actually say.`, false)
	w.waitFor(60*time.Second, ">you answered: Blue; S, L, and XL<", `data-you="You answered: Blue; S, L, and XL"`)
}

func TestAskUserQuestionDeclined(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{ToolName: "AskUserQuestion", ToolInput: auqInput}, {Text: "ok"}}, envOptions{quiet: true})
	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt("ask me")
	in := e.waitInput(w, s.ID)
	w.answer(in, map[string]any{"decision": "decline", "reason": "I don't know yet — decide yourself"})
	e.wantToolResult(2, askuser.DeclinedText("I don't know yet — decide yourself"), true)
	w.waitFor(60*time.Second, "Declined by you: I don")
}

func TestAskUserFormAndDecline(t *testing.T) {
	form := map[string]any{"title": "New service", "questions": []any{
		map[string]any{"question": "Name?", "type": "text", "placeholder": "billing"},
		map[string]any{"question": "Public?", "type": "yes_no"},
		map[string]any{"question": "Notes?", "type": "text", "required": false},
	}}
	e := newEnv(t, fakeapi.Scenario{
		{ToolName: "mcp__parley__ask_user_questions", ToolInput: form},
		{ToolName: askTool, ToolInput: map[string]any{"question": "Deploy now?"}},
		{Text: "ok"},
	}, envOptions{quiet: true})
	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt("set up")
	got := w.waitFor(60*time.Second, "New service", `placeholder="billing"`, `value="Yes"`, "(optional)")
	_ = got
	in := e.waitInputAfter(s.ID, "")
	// A required question left empty is refused, naming it.
	w.answer(in, map[string]any{"choice_1": "No", "other_0": "", "other_1": "", "other_2": ""})
	w.waitFor(30*time.Second, "Question 1: Write an answer.")
	w.answer(in, map[string]any{"other_0": "billing", "choice_1": "No", "other_1": "", "other_2": ""})
	// The CLI hands a result's structured content to the model instead of
	// its text; the text is in it as "message".
	got, isErr := e.lastToolResult(2)
	var sc struct {
		Answered   bool   `json:"answered"`
		AnsweredBy string `json:"answeredBy"`
		Message    string `json:"message"`
		Answers    []struct {
			Question, Text string
			Selected       []string
		} `json:"answers"`
	}
	if err := json.Unmarshal([]byte(got), &sc); err != nil || isErr {
		t.Fatalf("model received %q (error %v), want the structured result", got, isErr)
	}
	want := "The user answered your questions:\n1. \u201cName?\u201d → \u201cbilling\u201d\n2. \u201cPublic?\u201d → No\n3. \u201cNotes?\u201d → (no answer)"
	if !sc.Answered || sc.AnsweredBy != "you" || sc.Message != want || len(sc.Answers) != 3 || sc.Answers[1].Selected[0] != "No" {
		t.Errorf("model received %+v, want answered by you with %q", sc, want)
	}
	in2 := e.waitInputAfter(s.ID, in.ID)
	w.answer(in2, map[string]any{"decision": "decline", "reason": "ask me tomorrow"})
	e.wantToolResult(3, askuser.DeclinedText("ask me tomorrow"), false)
}

// pidOf returns the pid of the session's latest claude process.
func (e *env) pidOf(sessionID string) int {
	e.t.Helper()
	evs, _ := e.st.EventsAfter(e.t.Context(), sessionID, 0, 0)
	pid := 0
	for _, ev := range evs {
		if ev.Type == "run_started" {
			var p struct{ PID int }
			_ = json.Unmarshal(ev.Payload, &p)
			pid = p.PID
		}
	}
	if pid == 0 {
		e.t.Fatal("no run_started event")
	}
	return pid
}

func TestAskSurvivesKill(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{
		{Text: "Let me ask.", ToolName: askTool, ToolInput: colourQuestion(false)},
		{Text: "Thanks, carrying on."},
	}, envOptions{quiet: true})
	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt("pick a colour")
	in := e.waitInput(w, s.ID)
	// A crash after the CLI saved the turn: --resume needs its transcript
	// ($CLAUDE_CONFIG_DIR/projects/<cwd>/<session id>.jsonl), which it
	// writes shortly after the tool call starts.
	e.waitTranscript(s, askTool)
	if err := syscall.Kill(e.pidOf(s.ID), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	w.waitFor(60*time.Second, "process has ended since it asked")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, live := e.sup.Live(s.ID); !live {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the killed run did not end")
		}
	}
	if got, _ := e.st.GetInput(t.Context(), in.ID); got.Status != "pending" {
		t.Fatalf("after the kill the ask is %q, want pending", got.Status)
	}
	w.answer(in, map[string]any{"choice": "Blue"})
	w.waitFor(60*time.Second, "Thanks, carrying on.")
	text := e.fake.Requests()[1].LastUserText()
	for _, want := range []string{"Which colour?", "User selected: Blue"} {
		if !strings.Contains(text, want) {
			t.Errorf("the resumed turn lacks %q:\n%s", want, text)
		}
	}
	if n := count(e.eventTypes(s.ID), "run_started"); n != 2 {
		t.Errorf("%d runs, want 2 (the answer resumed the session)", n)
	}
}

// restart replaces the server and its supervisor with new ones on the same
// database, as a restarted `parley serve` does, and returns a new tab.
func (e *env) restart(sessionID string) *ws {
	e.t.Helper()
	e.sup.Shutdown()
	e.web.CloseClientConnections()
	e.web.Close()
	if _, err := e.st.RecoverAfterRestart(e.t.Context()); err != nil {
		e.t.Fatal(err)
	}
	old := e.srv
	e.broker = askuser.NewBroker()
	e.sup = runnerLike(e, old)
	srv, err := New(e.t.Context(), old.cfg, Deps{Store: e.st, Supervisor: e.sup, Hub: old.hub, Publisher: e.pub, Broker: e.broker, Log: old.log})
	if err != nil {
		e.t.Fatal(err)
	}
	e.srv = srv
	e.relay.Config.Handler = srv.RelayHandler()
	e.web = httptestServer(srv.Handler())
	return e.dial(sessionID, 0)
}

func TestAskSurvivesRestart(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{bashStep("touch x"), {Text: "Understood."}}, envOptions{quiet: true})
	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt("make x")
	in := e.waitInput(w, s.ID)
	w2 := e.restart(s.ID)
	w2.waitFor(60*time.Second, `data-kind="permission"`, "process has ended since it asked")
	w2.answer(in, map[string]any{"decision": "allow", "command": "touch x"})
	w2.waitFor(60*time.Second, "Understood.")
	text := e.fake.Requests()[1].LastUserText()
	for _, want := range []string{"permission to use Bash", "touch x", "you allowed it"} {
		if !strings.Contains(text, want) {
			t.Errorf("the resumed turn lacks %q:\n%s", want, text)
		}
	}
}

func TestInboxListsAndClearsAsks(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{
		{ToolName: askTool, ToolInput: colourQuestion(false)},
		{Text: "ok"},
	}, envOptions{quiet: true})
	s := e.newSession()
	inbox := e.dialPath("/inbox/ws?list=1")
	counter := e.dialPath("/inbox/ws")
	inbox.waitFor(30*time.Second, `id="inbox-list"`, `data-count="0"`)
	w := e.dial(s.ID, 0)
	w.prompt("pick")
	in := e.waitInput(w, s.ID)
	inbox.waitFor(30*time.Second, `id="inbox-`+in.ID+`"`, "Which colour?", `data-count="1"`)
	counter.waitFor(30*time.Second, `data-count="1"`, `data-newest="`+in.ID+`"`, "Claude asks: Which colour?")
	if page := e.getAs(e.user, "/inbox"); !strings.Contains(page, `id="inbox-`+in.ID+`"`) || !strings.Contains(page, "Which colour?") {
		t.Errorf("GET /inbox does not list the ask:\n%s", page)
	}
	// Answered in place, from the inbox.
	inbox.send(map[string]any{"action": "answer", "input_id": in.ID, "session_id": s.ID, "choice_0": "Green", "other_0": ""})
	e.wantToolResult(2, "User selected: Green", false)
	inbox.waitFor(30*time.Second, `id="inbox-`+in.ID+`" hx-swap-oob="delete"`, `data-count="0"`)
	counter.waitFor(30*time.Second, `data-count="0"`)
	w.waitFor(30*time.Second, "You answered: Green")
}

// dialPath opens a WebSocket to path on the web server as the test's member.
func (e *env) dialPath(path string) *ws {
	e.t.Helper()
	return e.dialPathAs(e.user, path)
}

// runnerLike builds a supervisor wired as newEnv wires one.
func runnerLike(e *env, old *Server) *runner.Supervisor {
	e.t.Helper()
	self, err := os.Executable()
	if err != nil {
		e.t.Fatal(err)
	}
	dir := e.dataDir
	return runner.NewSupervisor(context.Background(), runner.Deps{
		Config:  runner.Config{ClaudeBin: fakeapi.ClaudeBin(e.t), SelfExe: self, Env: append(os.Environ(), e.fake.Env(filepath.Join(dir, "claude"))...)},
		Journal: runstore.NewJournal(e.st), Publisher: e.pub, Broker: e.broker, Log: old.log, RuntimeDir: dir,
	})
}

func httptestServer(h http.Handler) *httptest.Server { return httptest.NewServer(h) }

// waitTranscript waits until the CLI's saved transcript of s mentions text.
func (e *env) waitTranscript(s store.Session, text string) {
	e.t.Helper()
	o, err := e.srv.runOptions(e.t.Context(), s)
	if err != nil {
		e.t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		files, _ := filepath.Glob(filepath.Join(o.ConfigDir, "projects", "*", s.ClaudeSessionID+".jsonl"))
		for _, f := range files {
			if b, _ := os.ReadFile(f); strings.Contains(string(b), text) {
				return
			}
		}
	}
	e.t.Fatalf("the CLI did not save a transcript mentioning %q", text)
}
