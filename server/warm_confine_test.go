package server

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"parley/runner/fakeapi"
)

// TestWarmConfinedLikeARun: in uid mode under run-guard with cgroups and
// pid namespaces (as serve starts runs), a process started ahead is
// confined as the project's cold run is: the project's uid, a cgroup of
// its own beside the run's in the project's, a pid namespace of its own.
func TestWarmConfinedLikeARun(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "reply"}}, envOptions{quiet: true, perTurn: true, isolation: "uid", guard: true,
		runConfig: confineRuns(t), warm: testWarm()})
	// The first session finds no process ahead: it starts cold, and its
	// take has the pool start one.
	id := e.createSessionForm(e.project.ID, "cold first")
	e.waitModelSaw("cold first")
	cold := childOf(t, e.livePid(id))
	warm := childOf(t, e.warmPid(e.project.ID))
	if got, want := procStatus(t, warm, "Uid"), procStatus(t, cold, "Uid"); got != want || strings.HasPrefix(got, "0\t") {
		t.Errorf("the process ahead runs as uid %q, the project's run as %q", got, want)
	}
	if got := strings.Fields(procStatus(t, warm, "NSpid")); len(got) < 2 {
		t.Errorf("the process ahead has no pid namespace of its own: NSpid %v", got)
	}
	wg, cg := cgroupOf(t, warm, "pids"), cgroupOf(t, cold, "pids")
	if wg == cg || filepath.Dir(wg) != filepath.Dir(cg) || wg == "/" {
		t.Errorf("the process ahead is in cgroup %q, the project's run in %q: want one of its own beside the run's", wg, cg)
	}
}

// procStatus is the value of a line of /proc/<pid>/status.
func procStatus(t *testing.T, pid int, key string) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, key+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("/proc/%d/status has no %s", pid, key)
	return ""
}

// cgroupOf is the process's cgroup path in the v1 hierarchy of controller.
func cgroupOf(t *testing.T, pid int, controller string) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.SplitN(l, ":", 3); len(f) == 3 && strings.Contains(","+f[1]+",", ","+controller+",") {
			return f[2]
		}
	}
	t.Fatalf("/proc/%d/cgroup names no %s hierarchy:\n%s", pid, controller, b)
	return ""
}
