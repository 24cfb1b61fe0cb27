package server

import (
	"testing"
	"time"

	"parley/runner/fakeapi"
)

// TestSwitchAcrossReplicas: a model switch made on replica B's page
// reaches the claude process that runs on replica A (cluster.Node.Switch
// forwards it to the owner): A's process answers set_model, both pages
// show the switch, and A's next model request uses the new model. With the
// switch made on B's own supervisor, B recorded it for a next start that
// never came and A's process went on with the old model.
func TestSwitchAcrossReplicas(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "one"}, {Text: "two"}}, envOptions{quiet: true})
	a, b := e.startReplica("A"), e.startReplica("B")
	s := e.newSession()
	wa := e.dialReplica(a, e.user, s.ID)
	wa.prompt("first")
	wa.waitFor(90*time.Second, "one")
	e.waitTurnOver(s.ID)
	if got := e.owner(s.ID); got != a.id {
		t.Fatalf("owner %q, want A (%s)", got, a.id)
	}
	wb := e.dialReplica(b, e.user, s.ID)
	wb.send(map[string]any{"action": "switch", "what": "model", "value": "haiku"})
	wb.waitFor(30*time.Second, "switched the model", "to haiku (claude-haiku-5-5).")
	wa.waitFor(30*time.Second, "switched the model", "to haiku (claude-haiku-5-5).")
	wa.prompt("second")
	wa.waitFor(90*time.Second, "two")
	reqs := e.fake.Requests()
	if got := reqs[len(reqs)-1].Model; got != "claude-haiku-5-5" {
		t.Errorf("A's next request used %q, want claude-haiku-5-5", got)
	}
}
