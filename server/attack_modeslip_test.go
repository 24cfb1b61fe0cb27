package server

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"parley/runner"
	"parley/runner/fakeapi"
	"parley/store"
)

// softWait is ws.waitFor that reports instead of stopping the test.
func (w *ws) softWait(timeout time.Duration, subs ...string) (string, bool) {
	var seen strings.Builder
	deadline := time.After(timeout)
	for {
		select {
		case f, ok := <-w.frames:
			if !ok {
				return seen.String(), false
			}
			seen.WriteString(f)
			if containsAll(seen.String(), subs) {
				return seen.String(), true
			}
		case <-deadline:
			return seen.String(), false
		}
	}
}

// TestTypedModelNeverReachesTheCLI: the pinned CLI applies a typed
// "/model NAME" itself (docs/cli-control.md), so a member's typed one
// must become the checked, recorded switch or be refused. The attack:
// "/model haiku" as the first message of a new session (the page's form,
// and MCP's create_session, which take the same path). Before the fix it
// reached the CLI as the first prompt: the model changed to haiku with no
// switch in the transcript while the header still said sonnet.
// Measured and holding: "/model haiku" sent with an attachment reaches
// the model as text (the CLI reads no command from content blocks), and
// "/model haiku now" is refused by the gateway ("haiku now" is no model).
func TestTypedModelNeverReachesTheCLI(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "first answer"}}, envOptions{quiet: true})
	ctx := t.Context()
	settings := e.project.ProjectSettings
	settings.Model = "sonnet"
	if err := e.st.UpdateProjectSettings(ctx, e.project.ID, settings, ""); err != nil {
		t.Fatal(err)
	}
	res := e.postAs(e.user, "/projects/"+strconv.FormatInt(e.project.ID, 10)+"/sessions", url.Values{"text": {"/model haiku"}})
	res.Body.Close()
	made, _ := e.st.ListSessions(ctx, e.project.ID)
	if res.StatusCode == http.StatusBadRequest && len(made) == 0 {
		return // refused before anything was made
	}
	t.Errorf("a new session with the first message /model haiku: status %d, %d sessions made; want 400 and none", res.StatusCode, len(made))
	if len(made) != 1 {
		return
	}
	w := e.dial(made[0].ID, 0)
	w.prompt("hello")
	w.waitFor(90*time.Second, "first answer", "Done ·")
	types := e.eventTypes(made[0].ID)
	for _, r := range append(e.fake.Requests(), e.fake.SideRequests()...) {
		if strings.Contains(r.Model, "haiku") && !slices.Contains(types, runner.TypeSwitched) {
			t.Errorf("a request for %s reached the model with no switch in the transcript (events %v)", r.Model, types)
		}
	}
}

// TestForgedModeSwitchRefused: forged WebSocket switches of the
// permission mode, with no process live (so a slip would be kept for the
// next start): an owner and a member to bypassPermissions in a project
// that does not allow it, a member to acceptEdits that only owners may
// pick here (the project allows its members default and plan only), and
// the CLI's own modes Parley does not offer (dontAsk, auto, "Plan").
// Each is refused with a sentence and writes nothing.
func TestForgedModeSwitchRefused(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true})
	if err := e.st.SetProjectMCPSettings(t.Context(), e.project.ID, store.MCPSettings{MemberPermissionModes: []string{"default", "plan"}, AskTransport: "http"}); err != nil {
		t.Fatal(err)
	}
	sess := e.newSession()
	owner := e.member("owner@example.com", "Owen Owner", roleOwner)
	member := e.member("mem@example.com", "Mem Ber", roleMember)
	for _, c := range []struct {
		who  *testUser
		mode string
	}{{owner, "bypassPermissions"}, {member, "bypassPermissions"}, {member, "acceptEdits"}, {owner, "dontAsk"}, {owner, "auto"}, {owner, "Plan"}} {
		w := e.dialAs(c.who, sess.ID, 0)
		w.send(map[string]any{"action": "switch", "what": "permission_mode", "value": c.mode})
		if got, ok := w.softWait(10*time.Second, `class="toast`, "is not allowed"); !ok {
			t.Errorf("%s switching to %s was not refused:\n%.1500s", c.who.Name, c.mode, got)
		}
	}
	if types := e.eventTypes(sess.ID); len(types) != 0 {
		t.Errorf("refused switches wrote events: %v", types)
	}
}

// TestSwitchFloodIsRateLimited: every switch is an event in the
// transcript that every open page receives (and, with a process live, a
// control request and a model probe). The attack: a member sends 300
// switches as fast as the socket takes them, or types "/model haiku"
// 300 times, which skipped the prompt rate limit too. Switches count
// against the member's message rate like prompts: beyond it they are
// refused with the rate sentence and write nothing.
func TestSwitchFloodIsRateLimited(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true, limits: DefaultLimits})
	sess := e.newSession()
	w := e.dial(sess.ID, 0)
	models := []string{"sonnet", "haiku"}
	for i := range 300 {
		if i%2 == 0 {
			w.send(map[string]any{"action": "switch", "what": "model", "value": models[i%4/2]})
		} else {
			w.prompt("/model " + models[(i+1)%4/2])
		}
	}
	w.send(map[string]any{"action": "switch", "what": "model", "value": "opus"})
	w.softWait(20*time.Second, "to opus") // the last one, if not limited
	time.Sleep(time.Second)
	n := strings.Count(strings.Join(e.eventTypes(sess.ID), " "), runner.TypeSwitched)
	if limit := e.srv.lim.prompts.PerMinute(); n > limit+1 {
		t.Errorf("%d switches recorded in a burst; the message rate is %d a minute", n, limit)
	}
}
