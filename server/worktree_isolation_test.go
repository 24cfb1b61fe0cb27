package server

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"parley/runner/fakeapi"
	"parley/sandbox"
)

// TestWorktreeGitRunsAsTheProject: the git Parley runs on a project's
// repository runs as that project's runs do. The repository is theirs to
// write, so its config can make git execute anything: here a clean and a
// smudge filter, which the worktree's checkout at the session's first run
// and the diff on every page load run. They must get the project's uid
// (or its bubblewrap sandbox) and a run's environment, never the server's
// privileges, files or secrets. It fails with git run as the server.
func TestWorktreeGitRunsAsTheProject(t *testing.T) {
	t.Run("uid", func(t *testing.T) { worktreeGitConfined(t, "uid") })
	t.Run("bwrap", func(t *testing.T) { worktreeGitConfined(t, "bwrap") })
}

func worktreeGitConfined(t *testing.T, isolation string) {
	t.Setenv("PARLEY_GIT_PROBE", "server-env-secret") // in the server's environment only
	e := newEnv(t, fakeapi.Scenario{{Text: "Looked around."}}, envOptions{quiet: true, isolation: isolation})
	secret := filepath.Join(e.dataDir, "server-secret")
	if err := os.WriteFile(secret, []byte("SERVER-FILE-SECRET"), 0o600); err != nil {
		t.Fatal(err)
	}
	repo := gitRepo(t)
	if err := os.WriteFile(filepath.Join(repo, ".gitattributes"), []byte("*.txt filter=probe\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runGit(t, repo, "add", "-A")
	runGit(t, repo, "commit", "-q", "-m", "attributes")
	// What a run could write into .git/config: a filter that records who
	// runs it, with what environment, and what it can read.
	probe := filepath.Join(repo, ".git", "probe")
	script := fmt.Sprintf(`sh -c 'id -u >> %[1]s-uid; env >> %[1]s-env; cat %[2]s >> %[1]s-read 2>&1; cat'`, probe, secret)
	runGit(t, repo, "config", "filter.probe.clean", script)
	runGit(t, repo, "config", "filter.probe.smudge", script)
	e.useRepo(repo)

	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt("look around")
	w.waitFor(90*time.Second, "Looked around.")
	if page := e.getAs(e.user, "/sessions/"+s.ID); !strings.Contains(page, `id="worktree"`) {
		t.Fatalf("the session page has no worktree panel:\n%.2000s", page)
	}
	uids, _ := os.ReadFile(probe + "-uid")
	if len(uids) > 0 {
		// Parley's git runs no program the repository's config names
		// (worktree/config.go, TestRedteamRemovedMembersFilterStillRuns).
		t.Errorf("Parley's git ran a filter the repository's config names (as uid %q)", uids)
	}
	// git made the session's worktree as the project's uid: what it
	// checked out belongs to that uid, not to root.
	checkedOut := filepath.Join(e.dataDir, "projects", fmt.Sprint(e.project.ID), "worktrees", s.ID, ".gitattributes")
	fi, err := os.Lstat(checkedOut)
	if err != nil {
		t.Fatalf("the session's worktree has no checked-out file: %v", err)
	}
	first, _, err := sandbox.ParseRange(sandbox.DefaultRange)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fi.Sys().(*syscall.Stat_t).Uid, uint32(first+int(e.project.ID)); got != want {
		t.Errorf("git checked the worktree out as uid %d, want the project's %d", got, want)
	}
	if len(uids) == 0 {
		return
	}
	if isolation == "uid" {
		first, _, err := sandbox.ParseRange(sandbox.DefaultRange)
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprint(first + int(e.project.ID))
		for line := range strings.Lines(string(uids)) {
			if strings.TrimSpace(line) != want {
				t.Errorf("git ran the repository's filter as uid %s, want the project's %s (all: %q)", strings.TrimSpace(line), want, uids)
			}
		}
	}
	env, _ := os.ReadFile(probe + "-env")
	for _, leak := range []string{"server-env-secret", upstreamKey, e.dbURL} {
		if strings.Contains(string(env), leak) {
			t.Errorf("the repository's filter saw %q in its environment", leak)
		}
	}
	if read, _ := os.ReadFile(probe + "-read"); strings.Contains(string(read), "SERVER-FILE-SECRET") || len(read) == 0 {
		t.Errorf("the repository's filter read the server's file (or did not try): %q", read)
	}
}
