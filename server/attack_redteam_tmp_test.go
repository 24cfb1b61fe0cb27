package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"parley/runner"
	"parley/runner/fakeapi"
	"parley/sandbox"
)

// TestRedteamSharedTmpAcrossProjects: with per-project uids every run
// shares the host's /tmp (sticky, and here fs.protected_symlinks is 0),
// where the claude CLI keeps directories named after its uid, outside
// TMPDIR (seen: /tmp/cc-socks-<uid>, /tmp/claude-<uid>). Uids are the
// range's first plus the project's id, so project A's run knows project
// B's. A's Bash makes B's directories first, its own and open to all,
// before B ever runs; B's run then runs a command with a secret in its
// output; A looks at what B left there. Nothing of B may reach A.
func TestRedteamSharedTmpAcrossProjects(t *testing.T) {
	hold := make(chan struct{})
	defer close(hold)
	sc := fakeapi.Scenario{
		{ToolName: "Bash"}, // A plants; set below
		{Text: "OUT " + fakeapi.ToolResultPlaceholder},
		{ToolName: "Bash", ToolInput: map[string]any{"command": "echo B-SECRET-OUTPUT > /dev/null; echo B-SECRET-OUTPUT; sleep 1"}},
		{Text: "B is done."},
		{ToolName: "Bash"}, // A looks; set below
		{Text: "OUT2 " + fakeapi.ToolResultPlaceholder},
	}
	e := newEnv(t, sc, envOptions{quiet: true, isolation: "uid", guard: true, runConfig: confineRuns(t)})
	ctx := t.Context()
	for _, id := range []int64{e.project.ID} {
		p, _ := e.st.GetProject(ctx, id)
		p.AllowedTools = []string{"Bash"}
		if err := e.st.UpdateProjectSettings(ctx, id, p.ProjectSettings, ""); err != nil {
			t.Fatal(err)
		}
	}
	pb, err := e.st.CreateProject(ctx, "Project B", 0)
	if err != nil {
		t.Fatal(err)
	}
	pb.AllowedTools = []string{"Bash"}
	if err := e.st.UpdateProjectSettings(ctx, pb.ID, pb.ProjectSettings, ""); err != nil {
		t.Fatal(err)
	}
	first, _, err := sandbox.ParseRange(sandbox.DefaultRange)
	if err != nil {
		t.Fatal(err)
	}
	uidB := first + int(pb.ID)
	dirs := []string{fmt.Sprintf("/tmp/claude-%d", uidB), fmt.Sprintf("/tmp/cc-socks-%d", uidB)}
	for _, d := range dirs {
		if _, err := os.Lstat(d); err == nil {
			t.Skipf("%s exists already (an earlier run of project %d on this machine)", d, pb.ID)
		}
	}
	t.Cleanup(func() {
		for _, d := range dirs {
			os.RemoveAll(d)
		}
	})
	plant := fmt.Sprintf(`for d in %s; do mkdir -m 0777 $d && chmod 0777 $d && echo "MADE $d"; done`, strings.Join(dirs, " "))
	look := fmt.Sprintf(`ls -laR %s 2>&1 | head -40; grep -rl B-SECRET-OUTPUT %s 2>/dev/null | sed 's/^/LEAK /'; grep -rh B-SECRET-OUTPUT %s 2>/dev/null | head -3; echo LOOKED`,
		strings.Join(dirs, " "), strings.Join(dirs, " "), strings.Join(dirs, " "))
	e.fake.SetStep(0, fakeapi.Step{ToolName: "Bash", ToolInput: map[string]any{"command": plant}})
	e.fake.SetStep(4, fakeapi.Step{ToolName: "Bash", ToolInput: map[string]any{"command": look}})

	sa := e.newSession()
	wa := e.dial(sa.ID, 0)
	wa.prompt("plant")
	wa.waitFor(120*time.Second, "OUT ", "Done ·")
	out, _ := e.lastToolResult(2)
	t.Logf("A planted:\n%s", out)

	bob := e.addUser("bob@example.com", "Bob", false)
	if err := e.st.SetMember(ctx, pb.ID, bob.ID, roleOwner); err != nil {
		t.Fatal(err)
	}
	sessB, err := e.st.CreateSessionBy(ctx, pb.ID, "b", "Bob", bob.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.sup.Prompt(ctx, sessB.ID, e.srv.starter(sessB), "B's work", runner.Author{Name: "Bob"}); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	if err := e.fake.WaitRequests(wctx, 4); err != nil {
		t.Fatal(err)
	}
	if outB, _ := e.lastToolResult(4); !strings.Contains(outB, "B-SECRET-OUTPUT") {
		t.Fatalf("B's Bash did not run: %q", outB)
	}
	e.sup.Stop(sessB.ID)

	wa.prompt("look")
	wa.waitFor(120*time.Second, "OUT2 ", "Done ·")
	out, _ = e.lastToolResult(6)
	t.Logf("A saw:\n%s", out)
	if strings.Contains(out, "LEAK ") || strings.Count(out, "B-SECRET-OUTPUT") > 0 {
		t.Errorf("project A read project B's command output from a directory A made in /tmp")
	}
	var owned []string
	for _, d := range dirs {
		filepath.WalkDir(d, func(p string, de os.DirEntry, err error) error {
			if err == nil && p != d {
				owned = append(owned, p)
			}
			return nil
		})
	}
	t.Logf("B's CLI wrote %d entries into the directories A made: %v", len(owned), owned)
	if len(owned) > 0 {
		t.Errorf("project B's CLI worked in %d entries of directories project A made and controls", len(owned))
	}
}
