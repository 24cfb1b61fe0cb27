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
