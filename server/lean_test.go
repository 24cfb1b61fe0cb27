package server

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"parley/runner"
	"parley/runner/fakeapi"
)

// Lean live sessions (issue 33, item 3; docs/instant.md): a live session
// keeps the CLI and, where a process is needed at all, a small one.

// TestLeanSessionHasNoWholeParleyHelper: by default a live session's
// processes are the CLI under the small parley-guard, with no `parley
// mcp-askuser` child: ask_user goes over Parley's own HTTP endpoint, and an
// ask still reaches the page and its answer the model.
func TestLeanSessionHasNoWholeParleyHelper(t *testing.T) {
	small := buildSmallGuard(t)
	e := newEnv(t, fakeapi.Scenario{{ToolName: askTool, ToolInput: colourQuestion(false)}, {Text: "You said {{tool_result}}"}},
		envOptions{quiet: true, guard: true, runConfig: func(c *runner.Config) { c.GuardExe = small }})
	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt("Ask me a colour.")
	in := e.waitInput(w, s.ID)

	pid := e.pidOf(s.ID)
	if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); exe != small {
		t.Errorf("the run's first process runs %q, want the small guard %s", exe, small)
	}
	for _, p := range procTree(pid) {
		if cmd := cmdline(p); strings.Contains(cmd, "mcp-askuser") || strings.Contains(cmd, "run-guard") && p != pid {
			t.Errorf("a live session keeps a whole-parley helper: pid %d %q", p, cmd)
		}
	}
	if ask, _ := filepath.Glob(filepath.Join(e.runtimeDir(), "askuser-*.json")); len(ask) != 0 {
		t.Errorf("stdio ask_user configs %v written with the http transport the default", ask)
	}
	w.answer(in, map[string]any{"choice": "Blue"})
	e.wantToolResult(2, "User selected: Blue", false)
}

// TestAskOverStdioWhenChosen: a project that chose the stdio transport
// (for the CLI's --mcp-config users) still gets a `parley mcp-askuser`
// child per run, and its asks round-trip.
func TestAskOverStdioWhenChosen(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{ToolName: askTool, ToolInput: colourQuestion(false)}, {Text: "You said {{tool_result}}"}},
		envOptions{quiet: true, askStdio: true})
	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt("Ask me a colour.")
	in := e.waitInput(w, s.ID)
	child := false
	for _, p := range procTree(e.pidOf(s.ID)) {
		child = child || strings.Contains(cmdline(p), "mcp-askuser")
	}
	if !child {
		t.Error("no mcp-askuser child with the stdio transport chosen")
	}
	w.answer(in, map[string]any{"choice": "Green"})
	e.wantToolResult(2, "User selected: Green", false)
}

// buildSmallGuard builds cmd/parley-guard, as the Dockerfile installs it.
func buildSmallGuard(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), runner.GuardName)
	if out, err := exec.Command("go", "build", "-o", bin, "parley/cmd/parley-guard").CombinedOutput(); err != nil {
		t.Fatalf("build parley-guard: %v\n%s", err, out)
	}
	return bin
}

// cmdline is the process's command line, its arguments joined by spaces.
func cmdline(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
}
