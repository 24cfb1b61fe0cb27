package server

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"parley/runner"
	"parley/runner/fakeapi"
	"parley/store"
)

// TestSwitchRefusedOutsideProject: the project pins sonnet. The header
// menu does not offer opus; a forged switch to opus and a typed
// "/model opus" are refused by the server with a sentence, and write
// nothing. A switch that slips past the server (made on the live run
// directly, as a CLI's own /model would) is refused by the gateway at the
// next request: no opus request reaches the model.
func TestSwitchRefusedOutsideProject(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "first answer"}, {Text: "opus answer"}}, envOptions{quiet: true})
	ctx := t.Context()
	settings := e.project.ProjectSettings
	settings.Model = "sonnet"
	if err := e.st.UpdateProjectSettings(ctx, e.project.ID, settings, ""); err != nil {
		t.Fatal(err)
	}
	sess := e.newSession()
	_, menu := e.get("/sessions/" + sess.ID + "/mode")
	if !strings.Contains(menu, `<option value="haiku"`) || strings.Contains(menu, `value="opus"`) {
		t.Errorf("the menu offers other models than sonnet's:\n%s", menu)
	}
	w := e.dial(sess.ID, 0)
	const refused = "Model &#34;opus&#34; is not allowed in this session"
	w.send(map[string]any{"action": "switch", "what": "model", "value": "opus"})
	w.waitFor(10*time.Second, `class="toast`, refused)
	w.prompt("/model opus")
	w.waitFor(10*time.Second, `class="toast`, refused)
	if types := e.eventTypes(sess.ID); len(types) != 0 {
		t.Errorf("refused switches wrote events: %v", types)
	}

	w.prompt("hello")
	w.waitFor(60*time.Second, "first answer", "Done ·")
	if err := e.sup.Switch(ctx, e.project.ID, sess.ID, runner.Switch{What: runner.SwitchModel, To: "opus", By: "a forged switch"}); err != nil {
		t.Fatalf("switch the live run directly: %v", err)
	}
	w.prompt("answer as opus")
	w.waitFor(90*time.Second, "is not allowed in this session")
	for _, r := range append(e.fake.Requests(), e.fake.SideRequests()...) {
		if strings.Contains(r.Model, "opus") {
			t.Errorf("a request for %s reached the model", r.Model)
		}
	}
}

// TestSwitchRemembered: a switch with no process live is an event saying
// it applies at the next start, and the next start uses it (--model,
// --permission-mode): the model's first request names the new model, in
// plan mode. (Sonnet, since plan mode with haiku asks for sonnet: see
// docs/cli-control.md.)
func TestSwitchRemembered(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "sonnet here"}}, envOptions{quiet: true})
	sess := e.newSession()
	w := e.dial(sess.ID, 0)
	w.send(map[string]any{"action": "switch", "what": "model", "value": "sonnet"})
	w.waitFor(10*time.Second, "you switched the model from default to sonnet. It applies when Claude next starts")
	w.send(map[string]any{"action": "switch", "what": "permission_mode", "value": "plan"})
	w.waitFor(10*time.Second, "you switched the permission mode from default to plan.")
	w.prompt("hello")
	w.waitFor(60*time.Second, "sonnet here", "Done ·")
	reqs := e.fake.Requests()
	if len(reqs) != 1 || reqs[0].Model != "claude-sonnet-5-5" || !strings.Contains(string(reqs[0].Raw), "Plan mode is active") {
		t.Errorf("first request: model %q, plan mode %v; want claude-sonnet-5-5 in plan mode", reqs[0].Model, strings.Contains(string(reqs[0].Raw), "Plan mode is active"))
	}
	if !slices.Contains(e.eventTypes(sess.ID), runner.TypeSwitched) {
		t.Error("no switch event kept")
	}
}

// TestSwitchRendered: a switch is a sentence naming who, from and to; the
// CLI's system/status sets the mode menu (plan mode ends on approval).
func TestSwitchRendered(t *testing.T) {
	render := func(typ, payload string) string {
		f := newBacklogRenderer(nil).frame(t.Context(), []store.Event{{SessionID: "s", Seq: 7, Type: typ, Payload: []byte(payload)}})
		return string(f.Data)
	}
	got := render(runner.TypeSwitched, `{"what":"model","from":"claude-opus-5-5","to":"haiku","model":"claude-haiku-5-5","by":"Ana","live":true}`)
	if !strings.Contains(got, "Ana switched the model from claude-opus-5-5 to haiku (claude-haiku-5-5).") || !strings.Contains(got, `data-value="haiku"`) {
		t.Errorf("switch rendered as:\n%s", got)
	}
	got = render("system", `{"type":"system","subtype":"status","status":null,"permissionMode":"default"}`)
	if !strings.Contains(got, `id="switch-state"`) || !strings.Contains(got, `data-what="permission_mode" data-value="default"`) {
		t.Errorf("status rendered as:\n%s", got)
	}
	if got := render("system", `{"type":"system","subtype":"status","status":"compacting"}`); strings.Contains(got, "switch-state") {
		t.Errorf("a status without a mode touched the menu:\n%s", got)
	}
}

// TestProjectCommandExpanded: a project command typed as a session's first
// prompt, or later, reaches Claude as the command file's text with
// $ARGUMENTS replaced (the CLI, reading no settings files, would send the
// literal "/deploy prod"); a first prompt "/model NAME" is refused.
func TestProjectCommandExpanded(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "deployed"}, {Text: "linted"}}, envOptions{quiet: true})
	cmds := filepath.Join(WorkspaceDir(e.dataDir, e.project), ".claude", "commands")
	os.MkdirAll(filepath.Join(cmds, "sub"), 0o755)
	os.WriteFile(filepath.Join(cmds, "deploy.md"), []byte("---\ndescription: Deploy\nallowed-tools: Bash\n---\nDeploy to $ARGUMENTS now.\n"), 0o644)
	os.WriteFile(filepath.Join(cmds, "sub", "lint.md"), []byte("Run the linter.\n"), 0o644)
	pp := "/projects/" + strconv.FormatInt(e.project.ID, 10) + "/sessions"
	if res := e.post(pp, url.Values{"text": {"/model haiku"}}); res.StatusCode != http.StatusBadRequest {
		t.Errorf("a first prompt /model haiku: status %d, want 400", res.StatusCode)
	}
	res := e.post(pp, url.Values{"text": {"/deploy staging"}})
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("create: status %d", res.StatusCode)
	}
	if err := e.fake.WaitRequests(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	if got, want := e.fake.Requests()[0].LastUserText(), "/deploy staging\n\nDeploy to staging now."; !strings.Contains(got, want) {
		t.Errorf("the model got %q, want it to hold %q", got, want)
	}
	sess := strings.TrimPrefix(res.Header.Get("Location"), "/sessions/")
	w := e.dial(sess, 0)
	w.waitFor(60*time.Second, "deployed", "Done ·")
	w.prompt("/sub:lint")
	w.waitFor(60*time.Second, "linted")
	if got := e.fake.Requests()[1].LastUserText(); !strings.Contains(got, "/sub:lint\n\nRun the linter.") {
		t.Errorf("the model got %q for /sub:lint", got)
	}
}
