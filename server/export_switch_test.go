package server

import (
	"strings"
	"testing"
	"time"

	"parley/runner/fakeapi"
)

// TestExportMarkdownShowsSwitches: a real session (real CLI, fake model)
// whose model and permission mode a member switches between two turns is
// exported with each switch, who made it, from and to, where it happened:
// after the first answer, before the second message.
func TestExportMarkdownShowsSwitches(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "first answer"}, {Text: "second answer"}}, envOptions{quiet: true})
	s := e.newSession()
	ann := e.member("ann@example.com", "Ann", roleMember)
	w := e.dialAs(ann, s.ID, 0)
	w.prompt("hello")
	w.waitFor(60*time.Second, "first answer", "Done ·")
	w.send(map[string]any{"action": "switch", "what": "model", "value": "sonnet"})
	w.waitFor(30*time.Second, "Ann switched the model from")
	w.send(map[string]any{"action": "switch", "what": "permission_mode", "value": "plan"})
	w.waitFor(30*time.Second, "Ann switched the permission mode from")
	w.prompt("and now")
	w.waitFor(60*time.Second, "second answer", "Done ·")

	md := e.getAs(e.user, "/sessions/"+s.ID+"/export.md")
	order := []string{"first answer", "_Ann switched the model from ", " to sonnet (claude-sonnet-5-5)._",
		"_Ann switched the permission mode from default to plan._", "> and now", "second answer"}
	at := 0
	for _, want := range order {
		i := strings.Index(md[at:], want)
		if i < 0 {
			t.Fatalf("the .md export lacks %q after byte %d (or has it out of order):\n%s", want, at, md)
		}
		at += i + len(want)
	}
}
