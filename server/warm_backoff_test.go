package server

import (
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"parley/runner/fakeapi"
)

// A process started ahead that dies before any session takes it (killed
// from outside here; a crash, the OOM killer, a failed prime in the world)
// is started again later each time, not at every tick of the pool: each
// start is about a second of CPU. Before, the pool started one every
// 50 ms tick for as long as they died (about 30 in 6 s here). A session
// created after the deaths still gets a process started ahead.
func TestWarmPoolBacksOffProcessesThatDie(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "after the deaths"}}, envOptions{quiet: true, perTurn: true, warm: testWarm()})
	e.get(fmt.Sprintf("/projects/%d", e.project.ID)) // the project is in use
	var killed []int
	for end := time.Now().Add(6 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		for _, pid := range e.warm.Pids(e.project.ID) {
			if !slices.Contains(killed, pid) {
				_ = syscall.Kill(-pid, syscall.SIGKILL)
				killed = append(killed, pid)
			}
		}
	}
	t.Logf("processes started ahead and killed in 6 s: %d", len(killed))
	if len(killed) < 2 {
		t.Fatalf("the pool started %d processes in 6 s of deaths, want it to start again", len(killed))
	}
	if len(killed) > 5 {
		t.Errorf("the pool started %d processes in 6 s while each died, want it to wait longer after each death (≤ 5)", len(killed))
	}
	pid := e.readyWarmPid(e.project.ID) // within its wait (8 s after 3 deaths, 16 s after 4)
	id := e.createSessionForm(e.project.ID, "after the deaths")
	e.waitModelSaw("after the deaths")
	if got := e.livePid(id); got != pid {
		t.Errorf("the session's run is pid %d, want the process started ahead, %d", got, pid)
	}
}
