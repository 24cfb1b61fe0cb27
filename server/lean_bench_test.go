//go:build bench

package server

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"parley/runner"
	"parley/runner/fakeapi"
)

// BenchmarkLiveSessionMemory reports the memory one live session keeps
// (issue 33, item 3): the Pss and the private memory (Private_Clean +
// Private_Dirty of /proc/PID/smaps_rollup) of every process of the run,
// the CLI and its helpers, summed and divided by the sessions. Two
// layouts, each with the real binaries built here:
//
//	whole:  runs under `parley run-guard`, ask_user by a `parley mcp-askuser` child (before);
//	lean:   runs under parley-guard, ask_user over Parley's HTTP endpoint (the default now);
//	primed: lean, each session started in a warm process that had its prime
//	        turn (runner/prime.go), the way a new session starts now.
//
// Run it once: go test -tags bench ./server -run '^$' -bench BenchmarkLiveSessionMemory -benchtime=1x
func BenchmarkLiveSessionMemory(b *testing.B) {
	dir := b.TempDir()
	parley, small := filepath.Join(dir, "parley"), filepath.Join(dir, runner.GuardName)
	for bin, pkg := range map[string]string{parley: "parley/cmd/parley", small: "parley/cmd/parley-guard"} {
		if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
			b.Fatalf("build %s: %v\n%s", pkg, err, out)
		}
	}
	n := benchInt("PARLEY_BENCH_MEM_SESSIONS", 10)
	for _, c := range []struct {
		name     string
		guard    string
		askStdio bool
		warm     bool
	}{{"whole", parley, true, false}, {"lean", small, false, false}, {"primed", small, false, true}} {
		b.Run(c.name, func(b *testing.B) {
			o := envOptions{quiet: true, perTurn: true, guard: true, askStdio: c.askStdio,
				runConfig: func(rc *runner.Config) { rc.GuardExe, rc.SelfExe = c.guard, parley }}
			if c.warm {
				o.warm = testWarm()
			}
			e := newEnv(b, fakeapi.Scenario{{Text: "hello"}}, o)
			var pss, private, procs int
			var pids []int
			for range n {
				var id string
				if c.warm {
					e.readyWarmPid(e.project.ID)
					id = e.createSessionForm(e.project.ID, "hi")
				} else {
					id = e.newSession().ID
				}
				w := e.dial(id, 0)
				if !c.warm {
					w.prompt("hi")
				}
				w.waitFor(2*time.Minute, "Done ·")
				pids = append(pids, e.pidOf(id))
			}
			time.Sleep(2 * time.Second) // the helpers have started and settled
			for _, pid := range pids {
				for _, p := range procTree(pid) {
					ps, pr := smapsRollupKiB(p)
					pss, private, procs = pss+ps, private+pr, procs+1
				}
			}
			if live := e.sup.Count(); live != n {
				b.Fatalf("%d live runs, want %d", live, n)
			}
			figure("live session ("+c.name+"): processes", float64(procs)/float64(n), "")
			figure("live session ("+c.name+"): Pss", float64(pss)/float64(n)/1024, "MiB")
			figure("live session ("+c.name+"): private", float64(private)/float64(n)/1024, "MiB")
		})
	}
}

// smapsRollupKiB is the process's Pss and private memory, in KiB.
func smapsRollupKiB(pid int) (pss, private int) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 2 {
			continue
		}
		v, _ := strconv.Atoi(fs[1])
		switch fs[0] {
		case "Pss:":
			pss = v
		case "Private_Clean:", "Private_Dirty:":
			private += v
		}
	}
	return pss, private
}
