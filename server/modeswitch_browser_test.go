package server

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"parley/runner"
	"parley/runner/fakeapi"
)

// TestBrowserSlashAndModelSwitch, in Chromium with the real CLI: typing
// "/" in the composer lists the CLI's commands and the project's own with
// its description; picking /model and sending "/model haiku" makes the
// fake model's next request use claude-haiku-5-5; the header menu's switch
// to sonnet does the same through set_model, and a second viewer sees
// "you switched the model from … to …" live; the mode menu's switch to
// plan puts the next request in plan mode. A viewer's menus are disabled.
func TestBrowserSlashAndModelSwitch(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "answer one"}, {Text: "answer two"}, {Text: "answer three"}, {Text: "answer four"}}, envOptions{quiet: true})
	tm := newTeam(e)
	cmds := filepath.Join(WorkspaceDir(e.dataDir, e.project), ".claude", "commands")
	if err := os.MkdirAll(cmds, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cmds, "deploy.md"), []byte("---\ndescription: Deploy the app to staging\n---\nDeploy: $ARGUMENTS\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sess := e.newSession()
	other := e.dialAs(tm["viewer"], sess.ID, 0)
	ctx := e.browser(t)
	var list string
	step(t, ctx, "open the session and send a first message",
		chromedp.Navigate(e.web.URL+"/sessions/"+sess.ID),
		chromedp.WaitVisible(`#switch-model`, chromedp.ByID),
		chromedp.SendKeys(`#prompt`, "hello", chromedp.ByID), pressEnter(0),
		chromedp.Poll(`document.getElementById("events").innerText.includes("answer one")`, nil, chromedp.WithPollingTimeout(60*time.Second)),
	)
	step(t, ctx, "type / and read the list",
		chromedp.SendKeys(`#prompt`, "/", chromedp.ByID),
		chromedp.WaitVisible(`#slash-list li`, chromedp.ByQuery),
		chromedp.Text(`#slash-list`, &list, chromedp.ByID),
	)
	for _, want := range []string{"/deploy", "Deploy the app to staging", "/model", "/compact"} {
		if !strings.Contains(list, want) {
			t.Errorf("the command list lacks %q:\n%s", want, list)
		}
	}
	if os.Getenv("PARLEY_AXE_JS") != "" {
		checkAxe(t, ctx, "session with the command list open")
	}
	var expanded, value string
	step(t, ctx, "pick /model with the keyboard and send /model haiku",
		chromedp.SendKeys(`#prompt`, "mod", chromedp.ByID),
		chromedp.AttributeValue(`#prompt`, "aria-activedescendant", &expanded, nil, chromedp.ByID),
		pressEnter(0),
		chromedp.Value(`#prompt`, &value, chromedp.ByID),
	)
	if expanded != "slash-opt-0" || value != "/model " {
		t.Fatalf("after picking: aria-activedescendant %q, composer %q; want slash-opt-0, %q", expanded, value, "/model ")
	}
	step(t, ctx, "send it",
		chromedp.SendKeys(`#prompt`, "haiku", chromedp.ByID), pressEnter(0),
		chromedp.Poll(`document.getElementById("events").innerText.includes("you switched the model from claude-opus-5-5 to haiku (claude-haiku-5-5).")`, nil, chromedp.WithPollingTimeout(30*time.Second)),
		chromedp.Poll(`document.getElementById("switch-model").value === "haiku"`, nil),
		chromedp.SendKeys(`#prompt`, "second", chromedp.ByID), pressEnter(0),
		chromedp.Poll(`document.getElementById("events").innerText.includes("answer two")`, nil, chromedp.WithPollingTimeout(60*time.Second)),
	)
	if reqs := e.fake.Requests(); len(reqs) != 2 || reqs[1].Model != "claude-haiku-5-5" {
		t.Fatalf("after /model haiku the model's next request named %q, want claude-haiku-5-5", reqs[len(reqs)-1].Model)
	}
	// chromedp.SetValue fires the select's input and change events, as a
	// person's pick does.
	step(t, ctx, "switch to sonnet in the header menu",
		chromedp.SetValue(`#switch-model`, "sonnet", chromedp.ByID),
		chromedp.Poll(`document.getElementById("events").innerText.includes("you switched the model from claude-haiku-5-5 to sonnet (claude-sonnet-5-5).")`, nil, chromedp.WithPollingTimeout(30*time.Second)),
	)
	other.waitFor(10*time.Second, "you switched the model from claude-haiku-5-5 to sonnet (claude-sonnet-5-5).")
	step(t, ctx, "send after the model menu's switch",
		chromedp.SendKeys(`#prompt`, "third", chromedp.ByID), pressEnter(0),
		chromedp.Poll(`document.getElementById("events").innerText.includes("answer three")`, nil, chromedp.WithPollingTimeout(60*time.Second)),
	)
	reqs := e.fake.Requests()
	if last := reqs[len(reqs)-1]; len(reqs) != 3 || last.Model != "claude-sonnet-5-5" || strings.Contains(string(last.Raw), "Plan mode is active") {
		t.Errorf("after the model menu's switch the request named %q, plan mode %v; want claude-sonnet-5-5, not in plan mode",
			last.Model, strings.Contains(string(last.Raw), "Plan mode is active"))
	}
	step(t, ctx, "switch to plan mode and send",
		chromedp.SetValue(`#switch-permission_mode`, "plan", chromedp.ByID),
		chromedp.Poll(`document.getElementById("events").innerText.includes("you switched the permission mode from default to plan.")`, nil, chromedp.WithPollingTimeout(30*time.Second)),
		chromedp.SendKeys(`#prompt`, "fourth", chromedp.ByID), pressEnter(0),
		chromedp.Poll(`document.getElementById("events").innerText.includes("answer four")`, nil, chromedp.WithPollingTimeout(60*time.Second)),
		// The turn's result is written after all before it (the transcript
		// shows text before its batch is written).
		chromedp.Poll(`document.querySelectorAll("#events .turn-result").length >= 4`, nil, chromedp.WithPollingTimeout(30*time.Second)),
	)
	reqs = e.fake.Requests()
	if last := reqs[len(reqs)-1]; last.Model != "claude-sonnet-5-5" || !strings.Contains(string(last.Raw), "Plan mode is active") {
		t.Errorf("after the mode menu's switch the request named %q, plan mode %v; want claude-sonnet-5-5 in plan mode",
			last.Model, strings.Contains(string(last.Raw), "Plan mode is active"))
	}
	if n := strings.Count(strings.Join(e.eventTypes(sess.ID), " "), runner.TypeSwitched); n != 3 {
		t.Errorf("%d switch events, want 3 (haiku, sonnet, plan): a menu's value was sent twice or set back", n)
	}
	res := e.do(tm["viewer"], "GET", "/sessions/"+sess.ID+"/mode", nil)
	defer res.Body.Close()
	b := new(strings.Builder)
	_, _ = io.Copy(b, res.Body)
	if strings.Count(b.String(), "disabled") != 2 || !strings.Contains(b.String(), "claude-sonnet-5-5") {
		t.Errorf("a viewer's menus are not read-only with the current model:\n%s", b)
		evs, _ := e.st.EventsAfter(t.Context(), sess.ID, 0, 0)
		for _, ev := range evs {
			if ev.Type == "system" || ev.Type == "switched" {
				t.Logf("%d %s %.200s", ev.Seq, ev.Type, ev.Payload)
			}
		}
	}
}
