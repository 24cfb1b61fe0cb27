package server

import (
	"slices"
	"strings"
	"testing"
	"time"

	"parley/runner"
	"parley/runner/fakeapi"
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
