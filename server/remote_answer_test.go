package server

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"parley/asks"
	"parley/runner/fakeapi"
	"parley/store"
)

// listenForTerminals runs the server's listener for `parley asks answer`
// and returns a client for the env's member once the listener is up.
func (e *env) listenForTerminals(t *testing.T) asks.Client {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.srv.ListenAnswers(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	c, err := asks.NewDB(t.Context(), e.st, e.user.Email)
	if err != nil {
		t.Fatal(err)
	}
	// The listener's LISTEN is issued on its own goroutine: wait for it.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		_, err := e.st.RequestAnswer(t.Context(), store.AnswerRequest{ID: "probe-" + t.Name(), InputID: "none", UserID: e.user.ID})
		if !errors.Is(err, store.ErrNoListener) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the answer listener did not start")
		}
	}
	return c
}

// runAsks runs `parley asks ARGS` against c and returns its output.
func runAsks(t *testing.T, c asks.Client, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := asks.Run(t.Context(), args, c, &out)
	return out.String(), err
}

// An ask answered from a terminal reaches the live claude process, once;
// a detached one resumes its session, as from a page.
func TestAnswerFromTerminal(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{
		{Text: "Let me ask.", ToolName: askTool, ToolInput: colourQuestion(false)},
		{Text: "Thanks: " + fakeapi.ToolResultPlaceholder},
		bashStep("touch from-terminal"),
		{Text: "Done."},
	}, envOptions{quiet: true})
	c := e.listenForTerminals(t)
	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt("pick a colour")
	in := e.waitInput(w, s.ID)

	out, err := runAsks(t, c)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{in.ID, "question", "Test project / test", "1. Which colour? (one of: Blue, Green, Orange)"} {
		if !strings.Contains(out, want) {
			t.Errorf("parley asks lacks %q:\n%s", want, out)
		}
	}
	// A viewer of the project sees nothing to answer and cannot answer.
	vic := e.member("vic@example.com", "Vic", "viewer")
	vc, err := asks.NewDB(t.Context(), e.st, vic.Email)
	if err != nil {
		t.Fatal(err)
	}
	if out, _ := runAsks(t, vc); !strings.Contains(out, "Nothing is waiting for you.") {
		t.Errorf("a viewer's parley asks:\n%s", out)
	}
	if _, err := runAsks(t, vc, "answer", in.ID, "--choice", "Blue"); err == nil || !strings.Contains(err.Error(), "Viewers can watch this project but not answer") {
		t.Errorf("a viewer's answer: %v, want refused", err)
	}
	if _, err := runAsks(t, c, "answer", in.ID[:8], "--choice", "Purple"); err == nil || !strings.Contains(err.Error(), `"Purple" is not one of the options`) {
		t.Errorf("answer with a wrong option: %v, want it refused", err)
	}
	msg, err := runAsks(t, c, "answer", in.ID[:8], "--choice", "Blue")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(msg, "Answered") {
		t.Errorf("answer said %q", msg)
	}
	e.wantToolResult(2, "User selected: Blue", false)
	w.waitFor(30*time.Second, ">"+e.user.Name+" answered: Blue<")
	if _, err := runAsks(t, c, "answer", in.ID, "--choice", "Green"); err == nil || !strings.Contains(err.Error(), "already answered") {
		t.Errorf("a second answer: %v, want already answered", err)
	}

	// A permission whose process ended: the answer resumes the session.
	w.prompt("make a file")
	perm := e.waitInputAfter(s.ID, in.ID)
	e.sup.Stop(s.ID)
	w.waitFor(60*time.Second, "process has ended since it asked")
	if out, _ := runAsks(t, c); !strings.Contains(out, "Claude wants to run: touch from-terminal") || !strings.Contains(out, "an answer resumes the session") {
		t.Errorf("parley asks does not show the detached permission:\n%s", out)
	}
	if _, err := runAsks(t, c, "answer", perm.ID, "--allow"); err != nil {
		t.Fatal(err)
	}
	w.waitFor(60*time.Second, "Done.")
	if got, _ := e.st.GetInput(t.Context(), perm.ID); got.Status != "answered" || got.AnsweredBy != e.user.Name {
		t.Errorf("permission = %q by %q, want answered by %s", got.Status, got.AnsweredBy, e.user.Name)
	}
	if out, _ := runAsks(t, c); !strings.Contains(out, "Nothing is waiting for you.") {
		t.Errorf("parley asks after both answers:\n%s", out)
	}
}

// With an API token, `parley asks` lists and answers through the server's
// MCP interface: the answer reaches the live process the same way.
func TestAnswerFromTerminalWithToken(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{
		{Text: "Let me ask.", ToolName: askTool, ToolInput: colourQuestion(false)},
		bashStep("touch by-token"),
		{Text: "Done: " + fakeapi.ToolResultPlaceholder},
	}, envOptions{quiet: true})
	c, err := asks.NewToken(t.Context(), e.web.URL, e.apiToken(e.user))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt("pick a colour")
	in := e.waitInput(w, s.ID)
	out, err := runAsks(t, c)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{in.ID, "question", "Test project / test", "1. Which colour? (one of: Blue, Green, Orange)"} {
		if !strings.Contains(out, want) {
			t.Errorf("parley asks (token) lacks %q:\n%s", want, out)
		}
	}
	if _, err := runAsks(t, c, "answer", in.ID[:8], "--choice", "Green", "--text", "a dark one"); err != nil {
		t.Fatal(err)
	}
	e.wantToolResult(2, "User selected: Green\nUser also wrote: a dark one", false)

	perm := e.waitInputAfter(s.ID, in.ID)
	if _, err := runAsks(t, c, "answer", perm.ID, "--always"); err == nil || !strings.Contains(err.Error(), "not available with a token") {
		t.Errorf("--always with a token: %v, want refused", err)
	}
	if _, err := runAsks(t, c, "answer", perm.ID, "--allow", "--command", "touch by-token-edited"); err != nil {
		t.Fatal(err)
	}
	w.waitFor(60*time.Second, "Done: ")
	if got, _ := e.st.GetInput(t.Context(), perm.ID); got.Status != "answered" || got.AnsweredBy != e.user.Name {
		t.Errorf("permission = %q by %q, want answered by %s", got.Status, got.AnsweredBy, e.user.Name)
	}
	if _, err := os.Stat(filepath.Join(e.workspace(s), "by-token-edited")); err != nil {
		t.Errorf("the edited command did not run: %v", err)
	}
}
