package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"parley/cgroup"
	"parley/runner"
	"parley/runner/fakeapi"
)

// Issue 27's attacks 4 and 6 and issue 28's item 3, with the real CLI in
// uid mode (Parley as root) under run-guard, as serve starts runs: what a
// run starts dies with it, whatever process group or session it made,
// and a run cannot hold more than its limits.

// confineEnv is a server whose member's Claude runs each of commands in
// turn (one Bash call per prompt), Bash being allowed by the project.
func confineEnv(t *testing.T, commands ...string) (*env, *ws, string) {
	t.Helper()
	return confineEnvIn(t, "uid", commands...)
}

// confineEnvIn is confineEnv with runs confined by isolation (uid, bwrap).
func confineEnvIn(t *testing.T, isolation string, commands ...string) (*env, *ws, string) {
	t.Helper()
	var sc fakeapi.Scenario
	for _, c := range commands {
		sc = append(sc, fakeapi.Step{ToolName: "Bash", ToolInput: map[string]any{"command": c}},
			fakeapi.Step{Text: "OUT " + fakeapi.ToolResultPlaceholder})
	}
	e := newEnv(t, sc, envOptions{quiet: true, isolation: isolation, guard: true, runConfig: confineRuns(t)})
	settings := e.project.ProjectSettings
	settings.AllowedTools = []string{"Bash"}
	if err := e.st.UpdateProjectSettings(t.Context(), e.project.ID, settings, ""); err != nil {
		t.Fatal(err)
	}
	s := e.newSession()
	return e, e.dial(s.ID, 0), s.ID
}

// bash has the model run its next Bash call and returns the call's
// output; n counts the calls from 0.
func (e *env) bash(w *ws, n int) string {
	e.t.Helper()
	w.prompt(fmt.Sprintf("call %d", n))
	w.waitFor(120*time.Second, "OUT ", "Done ·")
	out, _ := e.lastToolResult(2 + 2*n)
	e.t.Logf("call %d printed:\n%s", n, out)
	return out
}

// marker is a word no other process's command line holds.
func marker(t *testing.T) string {
	b := make([]byte, 6)
	rand.Read(b)
	return "parley-confine-" + hex.EncodeToString(b)
}

// daemon is a command that starts a process in a session of its own
// (setsid), with mark in its command line, that outlives the command.
func daemon(mark string) string {
	return fmt.Sprintf(`setsid sh -c 'sleep 600' %s </dev/null >/dev/null 2>&1 & sleep 0.5; echo started`, mark)
}

// procsWith are the live processes whose command line holds mark, as
// the host sees them.
func procsWith(mark string) []int {
	var pids []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(d + "/cmdline")
		if err == nil && strings.Contains(string(b), mark) {
			pid, _ := strconv.Atoi(filepath.Base(d))
			pids = append(pids, pid)
		}
	}
	return pids
}

// waitGone fails the test unless no process holds mark within wait.
func waitGone(t *testing.T, mark, what string, wait time.Duration) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		pids := procsWith(mark)
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, pid := range pids {
				_ = syscall.Kill(pid, syscall.SIGKILL) // leave the machine clean
			}
			t.Fatalf("%s: %d processes still run %s later", what, len(pids), wait)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitThere waits until a process holds mark.
func waitThere(t *testing.T, mark string) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); len(procsWith(mark)) == 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no process holds %s: the command did not start", mark)
		}
	}
}

// TestConfineDaemonDiesWhenTheSessionStops (attack 4): a setsid daemon
// from Bash ends with the run when the session is stopped.
func TestConfineDaemonDiesWhenTheSessionStops(t *testing.T) {
	mark := marker(t)
	e, w, id := confineEnv(t, daemon(mark)+`; echo "procs=$(ls -d /proc/[0-9]* | wc -l)"`)
	out := e.bash(w, 0)
	if !strings.Contains(out, "started") {
		t.Fatalf("the daemon did not start: %q", out)
	}
	// The run's /proc shows its own processes only: no other run's
	// environment to read (the guard, the CLI, its shell, the daemon...).
	if _, n, _ := strings.Cut(out, "procs="); len(strings.TrimSpace(n)) == 0 || len(strings.TrimSpace(n)) > 2 {
		t.Errorf("the run sees %q processes in /proc, want its own few", n)
	}
	waitThere(t, mark)
	e.sup.Stop(id)
	waitGone(t, mark, "the session stopped", 10*time.Second)
	e.healthy()
}

// TestConfineBwrap: in bubblewrap (started as the project's uid when
// Parley is root) a run is in its cgroup too: a setsid daemon dies with
// the session's stop, and a fork bomb stops at the task limit.
func TestConfineBwrap(t *testing.T) {
	mark := marker(t)
	e, w, id := confineEnvIn(t, "bwrap", daemon(mark), forkBomb(mark+"-bomb"))
	if out := e.bash(w, 0); !strings.Contains(out, "started") {
		t.Fatalf("the daemon did not start: %q", out)
	}
	waitThere(t, mark)
	if out := e.bash(w, 1); strings.Contains(out, "spawned=1000") {
		t.Errorf("the run started 1000 processes: %q", out)
	}
	e.healthy()
	e.sup.Stop(id)
	waitGone(t, mark, "the session stopped", 15*time.Second)
}

// TestConfineDaemonDiesWhenItsMemberIsRemoved (attack 4): the member whose
// turn started the daemon is removed from the project; the run that ran
// their turn ends, with everything it started.
func TestConfineDaemonDiesWhenItsMemberIsRemoved(t *testing.T) {
	mark := marker(t)
	e, w, _ := confineEnv(t, daemon(mark))
	owner := e.member("owner@example.com", "Owner", roleOwner)
	e.bash(w, 0)
	waitThere(t, mark)
	res := e.postAs(owner, fmt.Sprintf("/projects/%d/settings/members/%d/remove", e.project.ID, e.user.ID), nil)
	res.Body.Close()
	if res.StatusCode != http.StatusOK && res.StatusCode != http.StatusSeeOther {
		t.Fatalf("remove the member: %d", res.StatusCode)
	}
	waitGone(t, mark, "the member was removed", 15*time.Second)
	e.healthy()
}

// TestConfineDaemonDiesWithItsProject (attack 4): archiving the project,
// then deleting another's, ends their runs and what they started.
func TestConfineDaemonDiesWithItsProject(t *testing.T) {
	for _, action := range []string{"archive", "delete"} {
		t.Run(action, func(t *testing.T) {
			mark := marker(t)
			e, w, _ := confineEnv(t, daemon(mark))
			owner := e.member("owner@example.com", "Owner", roleOwner)
			e.bash(w, 0)
			waitThere(t, mark)
			res := e.postAs(owner, fmt.Sprintf("/projects/%d/%s", e.project.ID, action),
				url.Values{"archived": {"1"}, "confirm": {e.project.Name}})
			res.Body.Close()
			if res.StatusCode != http.StatusSeeOther {
				t.Fatalf("%s the project: %d", action, res.StatusCode)
			}
			waitGone(t, mark, "the project went ("+action+")", 10*time.Second)
			e.healthy()
		})
	}
}

// TestConfineRunCannotReadAnotherRunsToken (attack 4): a daemon of session
// 1 reads every /proc/<pid>/environ it can, while session 2 of the same
// project (the same uid) runs: session 2's gateway token never reaches
// it, since each run's /proc shows its own pid namespace only.
func TestConfineRunCannotReadAnotherRunsToken(t *testing.T) {
	mark := marker(t)
	hold := make(chan struct{})
	defer close(hold)
	harvester := fmt.Sprintf(`setsid sh -c 'while :; do cat /proc/[0-9]*/environ 2>/dev/null | tr "\0" "\n" | grep parley-run- >> harvest; sleep 0.2; done' %s </dev/null >/dev/null 2>&1 & echo started`, mark)
	e, w, _ := confineEnv(t, harvester, "")
	t.Cleanup(func() {
		for _, pid := range procsWith(mark) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	e.fake.SetStep(2, fakeapi.Step{Text: "Session two is working.", Hold: hold}) // session 2's reply
	e.bash(w, 0)
	waitThere(t, mark)
	s2 := e.newSession()
	w2 := e.dial(s2.ID, 0)
	w2.prompt("work")
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	if err := e.fake.WaitRequests(ctx, 3); err != nil {
		t.Fatal(err)
	}
	r2, ok := e.sup.Live(s2.ID)
	if !ok || r2.Spec().ModelToken == "" {
		t.Fatal("session 2 has no live run with a token")
	}
	time.Sleep(2 * time.Second) // the daemon reads /proc five times a second
	got, _ := os.ReadFile(filepath.Join(WorkspaceDir(e.dataDir, e.project), "harvest"))
	if strings.Contains(string(got), r2.Spec().ModelToken) {
		t.Errorf("session 1's daemon read session 2's model token from /proc")
	}
	if !strings.Contains(string(got), "parley-run-") { // its own run's, in its own namespace
		t.Errorf("the daemon read no token at all: it did not run as meant")
	}
}

// TestConfineGitFilterDiesWithGit: git, which Parley runs on a worktree
// project's repository as the project's uid, runs the smudge filter a
// run planted; the daemon the filter starts dies when git ends (git runs
// under the guard in a pid namespace of its own, as a run does).
func TestConfineGitFilterDiesWithGit(t *testing.T) {
	mark := marker(t)
	plant := fmt.Sprintf(`G=$(git rev-parse --path-format=absolute --git-common-dir) && mkdir -p "$G/info" && echo '* filter=evil' >> "$G/info/attributes" && printf '#!/bin/sh\nsetsid sh -c "sleep 300" %s </dev/null >/dev/null 2>&1 &\nexec cat\n' > "$G/evil.sh" && chmod +x "$G/evil.sh" && git config -f "$G/config" filter.evil.smudge "$G/evil.sh" && echo PLANTED`, mark)
	e, w, id := confineEnv(t, plant, "")
	e.fake.SetStep(2, fakeapi.Step{Text: "Session two is working."})
	t.Cleanup(func() {
		for _, pid := range procsWith(mark) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	e.useRepo(gitRepo(t))
	if out := e.bash(w, 0); !strings.Contains(out, "PLANTED") {
		t.Fatalf("the filter was not planted: %q", out)
	}
	e.sup.Stop(id)
	w2 := e.dial(e.newSession().ID, 0)
	w2.prompt("work") // its worktree's checkout runs the filter
	w2.waitFor(90*time.Second, "Session two is working.")
	waitGone(t, mark, "git ended", 5*time.Second)
}

// TestConfineDaemonDiesWhenTheGuardIsKilled (attack 4): the run's guard,
// the process Parley started, is SIGKILLed, as when Parley dies and the
// guard gets no chance either; the daemon dies all the same.
func TestConfineDaemonDiesWhenTheGuardIsKilled(t *testing.T) {
	mark := marker(t)
	e, w, id := confineEnv(t, daemon(mark))
	e.bash(w, 0)
	waitThere(t, mark)
	r, ok := e.sup.Live(id)
	if !ok {
		t.Fatal("no live run")
	}
	if err := syscall.Kill(r.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, mark, "the guard was killed", 10*time.Second)
	e.healthy()
}

// TestConfineAllowedCommandDiesWithClaude (issue 28, item 3): an allowed
// Bash command runs in a process group of its own (the CLI's doing);
// when claude is SIGKILLed mid-command, the command dies too rather
// than run on under init.
func TestConfineAllowedCommandDiesWithClaude(t *testing.T) {
	mark := marker(t)
	e, w, id := confineEnv(t, fmt.Sprintf(`sh -c 'sleep 300; touch late' %s`, mark))
	w.prompt("call 0")
	waitThere(t, mark)
	r, ok := e.sup.Live(id)
	if !ok {
		t.Fatal("no live run")
	}
	claude := childOf(t, r.Pid())
	if err := syscall.Kill(claude, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, mark, "claude was killed", 10*time.Second)
	e.healthy()
}

// childOf is the one child of pid (the guard's: claude), as the host sees it.
func childOf(t *testing.T, pid int) int {
	t.Helper()
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		if fs := strings.Fields(string(b)); len(fs) > 0 {
			c, _ := strconv.Atoi(fs[0])
			return c
		}
	}
	t.Fatalf("process %d has no child", pid)
	return 0
}

// TestConfineForkBombHitsTheTaskLimit (attack 6): a run that forks a
// thousand processes is stopped at its task limit; the server stays
// healthy, and what it forked dies with the run.
func TestConfineForkBombHitsTheTaskLimit(t *testing.T) {
	mark := marker(t)
	e, w, id := confineEnv(t, forkBomb(mark))
	out := e.bash(w, 0)
	if strings.Contains(out, "spawned=1000") {
		t.Errorf("the run started 1000 processes: %q", out)
	}
	e.healthy()
	e.sup.Stop(id)
	waitGone(t, mark, "the session stopped", 15*time.Second)
}

// forkBomb starts 1000 processes holding mark, or as many as it can.
func forkBomb(mark string) string {
	return fmt.Sprintf(`sh -c 'i=0; while [ $i -lt 1000 ]; do sh -c "sleep 120" %s >/dev/null 2>&1 & i=$((i+1)); done; echo spawned=$i' 2>&1 | tail -2`, mark)
}

// TestConfineMemoryHogDiesInItsCgroup (attack 6): a run that takes 3 GiB
// is killed by the kernel in its own cgroup (2 GiB by default); Parley
// lives and stays healthy.
func TestConfineMemoryHogDiesInItsCgroup(t *testing.T) {
	// tail keeps a line whole in memory: 3 GiB without a newline.
	e, w, _ := confineEnv(t, `head -c 3221225472 /dev/zero | tail >/dev/null; echo "status=$?"`)
	out := e.bash(w, 0)
	if !strings.Contains(out, "status=137") {
		t.Errorf("the hog was not killed (want status=137, SIGKILL): %q", out)
	}
	e.healthy()
}

// TestConfineBigFileFails (attack 6): a run cannot write a file over the
// size cap (PARLEY_RUN_MAX_FILE, 1 GiB by default) onto the file system.
func TestConfineBigFileFails(t *testing.T) {
	e, w, _ := confineEnv(t, `head -c 1610612736 /dev/zero > big; echo "status=$?"; stat -c size=%s big; rm -f big`)
	out := e.bash(w, 0)
	if strings.Contains(out, "size=1610612736") || !strings.Contains(out, "size=1073741824") {
		t.Errorf("the run wrote past the 1 GiB cap: %q", out)
	}
	e.healthy()
}

// confineRuns confines the env's runs as serve does by default: a cgroup
// each (512 tasks, 2 GiB), OOM score 800, files up to 1 GiB.
func confineRuns(t *testing.T) func(*runner.Config) {
	return func(rc *runner.Config) {
		m, err := cgroup.Open(cgroup.Defaults)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := m.Close(); err != nil {
				t.Error(err)
			}
		})
		rc.Cgroups, rc.OOMScore, rc.MaxFile, rc.PIDNamespace = m, 800, 1<<30, true
	}
}
