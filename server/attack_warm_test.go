package server

import (
	"fmt"
	"testing"
	"time"

	"parley/runner/fakeapi"
)

// TestWarmViewerStartsNothing: a process started ahead is ~0.7 s of CPU
// and a live claude process (with a worktree made ahead in a git
// project) that only someone who may start a session can use. The
// attack: a viewer, who may not prompt, opens the project's page and one
// of its sessions, again and again, to keep Parley starting and holding
// processes (and run slots) for nobody. Nothing starts for them.
func TestWarmViewerStartsNothing(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true, warm: testWarm()})
	viewer := e.member("viewer@example.com", "Vi Ewer", roleViewer)
	sess := e.newSession()
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		e.getAs(viewer, fmt.Sprintf("/projects/%d", e.project.ID))
		e.getAs(viewer, "/sessions/"+sess.ID)
		if pids := e.warm.Pids(e.project.ID); len(pids) != 0 {
			t.Fatalf("a viewer's page views started claude ahead: pids %v", pids)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
