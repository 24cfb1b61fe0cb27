package server

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"parley/launch"
	"parley/runner/fakeapi"
)

// TestWarmGitProjectWorktree: in a git project the process ahead works in
// the session's worktree, made ahead; the session that takes it has that
// worktree (recorded active). When the base branch moves on before the
// next take, the process ahead (branched from the old base) is not used:
// the session starts cold in a worktree of the new base.
func TestWarmGitProjectWorktree(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "reply"}}, envOptions{quiet: true, perTurn: true, warm: testWarm()})
	repo := gitRepo(t)
	e.useRepo(repo)
	e.get(fmt.Sprintf("/projects/%d", e.project.ID))
	pid := e.warmPid(e.project.ID)
	id := e.createSessionForm(e.project.ID, "in the worktree")
	e.waitModelSaw("in the worktree")
	if got := e.livePid(id); got != pid {
		t.Fatalf("the session runs in %d, want the process started ahead, %d", got, pid)
	}
	dir := launch.WorktreeDir(e.dataDir, e.project.ID, id)
	if cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid)); err != nil || cwd != dir {
		t.Fatalf("the process works in %q (%v), want the session's worktree %s", cwd, err, dir)
	}
	wt, err := e.st.SessionWorktree(t.Context(), id)
	if err != nil || wt.Branch != "parley/"+id || wt.State != "active" {
		t.Fatalf("the session's worktree row: %+v (%v)", wt, err)
	}

	next := e.warmPid(e.project.ID, pid)
	if err := os.WriteFile(filepath.Join(repo, "new.txt"), []byte("new\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runGit(t, repo, "add", "-A")
	runGit(t, repo, "commit", "-q", "-m", "the base moves on")
	id2 := e.createSessionForm(e.project.ID, "after the base moved")
	e.waitModelSaw("after the base moved")
	if got := e.livePid(id2); got == next {
		t.Fatalf("the session runs in the process branched from the old base (%d)", next)
	}
	pidGone(t, next, 10*time.Second)
	if _, err := os.Stat(filepath.Join(launch.WorktreeDir(e.dataDir, e.project.ID, id2), "new.txt")); err != nil {
		t.Fatalf("the session's worktree is not of the new base: %v", err)
	}
	if branches := runGit(t, repo, "branch", "--list", "parley/*"); strings.Count(branches, "parley/") < 2 {
		t.Fatalf("branches: %s", branches)
	}
}
