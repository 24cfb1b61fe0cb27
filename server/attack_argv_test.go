package server

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"parley/metrics"
	"parley/runner"
	"parley/runner/fakeapi"
)

// TestAttackReadsOtherRuns plays a member of project A whose Claude looks
// for what other runs leak through the machine rather than through files:
// project B's instructions (the owner's appended system prompt and the
// workspace's CLAUDE.md) in the arguments of B's live CLI, which every
// process may read in /proc/<pid>/cmdline; and Parley's /metrics, served
// to loopback clients, which a run is. Runs as `parley serve` starts them:
// per-project uids (Parley as root), and bubblewrap.
func TestAttackReadsOtherRuns(t *testing.T) {
	t.Run("uid", func(t *testing.T) { attackOtherRuns(t, "uid") })
	t.Run("bwrap", func(t *testing.T) { attackOtherRuns(t, "bwrap") })
}

func attackOtherRuns(t *testing.T, isolation string) {
	holdB := make(chan struct{})
	defer close(holdB)
	a := argvAttacks()
	sc := fakeapi.Scenario{{Text: "Project B is working.", Hold: holdB}}
	for range a {
		sc = append(sc, fakeapi.Step{ToolName: "Bash"}, fakeapi.Step{Text: "OUT " + fakeapi.ToolResultPlaceholder})
	}
	e := newEnv(t, sc, envOptions{quiet: true, isolation: isolation, guard: true})
	ctx := t.Context()
	settings := e.project.ProjectSettings
	settings.AllowedTools = []string{"Bash"}
	if err := e.st.UpdateProjectSettings(ctx, e.project.ID, settings, ""); err != nil {
		t.Fatal(err)
	}
	metricsURL := e.serveMetrics()
	runB := e.liveRunOfB(ctx)
	// B's instructions reach B's model: what the attack looks for is there.
	for _, want := range []string{"B-SECRET-INSTRUCTIONS", "B-SECRET-APPEND"} {
		if sys := e.fake.Requests()[0].System; !strings.Contains(sys, want) {
			t.Fatalf("B's system prompt lacks %q:\n%.2000s", want, sys)
		}
	}
	// Whatever a run may see of /proc (a pid namespace hides other runs),
	// no process of the machine carries B's instructions in its arguments.
	if pid, ok := argvHolding("B-SECRET-"); ok {
		t.Errorf("process %s has B's instructions in its arguments", pid)
	}
	vars := strings.NewReplacer("{METRICS}", metricsURL, "{DATA}", e.dataDir, "{PID_B}", fmt.Sprint(runB.Pid()))
	for i := range a {
		a[i].command = vars.Replace(a[i].command)
		e.fake.SetStep(1+2*i, fakeapi.Step{ToolName: "Bash", ToolInput: map[string]any{"command": a[i].command}})
	}
	s := e.newSession()
	w := e.dial(s.ID, 0)
	for i, at := range a {
		w.prompt("attack: " + at.name)
		w.waitFor(60*time.Second, "OUT ", "Done ·")
		out, _ := e.lastToolResult(3 + 2*i)
		t.Logf("%s: %s\n%s", at.name, at.command, out)
		for _, bad := range at.mustNot {
			if strings.Contains(out, bad) {
				t.Errorf("attack %q worked: the output holds %q", at.name, bad)
			}
		}
		for _, want := range at.mustShow {
			if !strings.Contains(out, want) {
				t.Errorf("attack %q: the output lacks %q", at.name, want)
			}
		}
		if len(at.failed) > 0 && !slices.ContainsFunc(at.failed, func(f string) bool { return strings.Contains(out, f) }) {
			t.Errorf("attack %q: the output shows none of %q", at.name, at.failed)
		}
		e.healthy()
	}
}

// argvAttacks are what project A's Claude tries on B's live run and on
// Parley's metrics.
func argvAttacks() []attack {
	return []attack{
		{name: "read B's instructions in the processes' arguments",
			command: "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done | grep -o 'B-SECRET-[A-Z]*' | sort -u; " +
				"tr '\\0' ' ' < /proc/{PID_B}/cmdline | head -c 300; echo; echo END",
			mustNot:  []string{"B-SECRET-INSTRUCTIONS", "B-SECRET-APPEND"},
			mustShow: []string{"END"}},
		{name: "read B's instructions file",
			command: "cat {DATA}/run/instructions-* 2>&1; ls {DATA}/run 2>&1; echo END",
			mustNot: []string{"B-SECRET-INSTRUCTIONS", "B-SECRET-APPEND"},
			failed:  []string{"Permission denied", "No such file or directory"}},
		{name: "read Parley's metrics from loopback",
			command: "curl -sS -m 10 -w ' HTTP %{http_code}' {METRICS}/metrics 2>&1 | tail -c 400; echo; echo END",
			mustNot: []string{"parley_runs_live", "HTTP 200"},
			// Refused by the server, or not reachable at all.
			failed: []string{"HTTP 403", "HTTP 401", "Couldn't connect", "Failed to connect", "Could not resolve"}},
	}
}

// serveMetrics serves the server's /metrics handler, as serve wires it, on
// a loopback port of its own (the env's web server has no metrics) and
// returns its URL.
func (e *env) serveMetrics() string {
	e.t.Helper()
	e.srv.metrics = metrics.New(func() int { return e.sup.Count() }, func() int { return e.sup.Queued() })
	srv := httptest.NewServer(e.srv.handleMetrics())
	e.t.Cleanup(srv.Close)
	return srv.URL
}

// liveRunOfB makes project B, whose owner set instructions and an
// appended system prompt, and starts a run of it that stays live (its
// model reply is held); it returns the run.
func (e *env) liveRunOfB(ctx context.Context) *runner.Run {
	e.t.Helper()
	pb, err := e.st.CreateProject(ctx, "Project B", 0)
	if err != nil {
		e.t.Fatal(err)
	}
	pb.Instructions, pb.AppendSystemPrompt = "B-SECRET-INSTRUCTIONS", "B-SECRET-APPEND"
	if err := e.st.UpdateProjectSettings(ctx, pb.ID, pb.ProjectSettings, ""); err != nil {
		e.t.Fatal(err)
	}
	bob := e.addUser("bob@example.com", "Bob", false)
	if err := e.st.SetMember(ctx, pb.ID, bob.ID, roleOwner); err != nil {
		e.t.Fatal(err)
	}
	sessB, err := e.st.CreateSessionBy(ctx, pb.ID, "b", "Bob", bob.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.sup.Prompt(ctx, sessB.ID, e.srv.starter(sessB), "B's work", runner.Author{Name: "Bob"}); err != nil {
		e.t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := e.fake.WaitRequests(wctx, 1); err != nil {
		e.t.Fatal(err)
	}
	runB, ok := e.sup.Live(sessB.ID)
	if !ok {
		e.t.Fatal("B's run is not live")
	}
	return runB
}

// argvHolding finds a process whose arguments hold text, as any user of
// the machine may read them in /proc/<pid>/cmdline.
func argvHolding(text string) (string, bool) {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		if b, err := os.ReadFile(filepath.Join(d, "cmdline")); err == nil && bytes.Contains(b, []byte(text)) {
			return filepath.Base(d), true
		}
	}
	return "", false
}
