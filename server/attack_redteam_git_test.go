package server

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"parley/runner"
	"parley/runner/fakeapi"
)

// Red-team attacks on issue 27's confinement through the git Parley runs
// on a worktree project's repository, which the project's runs may
// configure: each plays a member's Claude with a shell as the project's
// uid, through the real CLI, as serve runs it.

// TestRedteamGitFilterOutlivesTheRun: git, which Parley runs on a worktree
// project's repository as the project's uid, executes what the
// repository's config says (a smudge filter, here, named in
// $GIT_DIR/info/attributes so no commit is needed). Session 1's Bash plants
// one that starts a daemon. Session 2's first run makes its worktree, so
// Parley's git runs the filter: outside any run, its cgroup and its pid
// namespace. The daemon must not outlive that git, and must never read a
// run's model token from /proc/<pid>/environ (same uid, but another pid
// namespace).
func TestRedteamGitFilterOutlivesTheRun(t *testing.T) {
	t.Run("uid", func(t *testing.T) { gitFilterDaemon(t, "uid") })
	t.Run("bwrap", func(t *testing.T) { gitFilterDaemon(t, "bwrap") })
}

func gitFilterDaemon(t *testing.T, isolation string) {
	mark := marker(t)
	hold := make(chan struct{})
	var once bool
	release := func() {
		if !once {
			once = true
			close(hold)
		}
	}
	defer release()
	sc := fakeapi.Scenario{
		{ToolName: "Bash"}, // set below, once the repository is known
		{Text: "OUT " + fakeapi.ToolResultPlaceholder},
		{Text: "Session two is working.", Hold: hold},
	}
	e := newEnv(t, sc, envOptions{quiet: true, isolation: isolation, guard: true, runConfig: confineRuns(t)})
	repo := gitRepo(t)
	e.useRepo(repo)
	harvest := filepath.Join(repo, ".git", "harvest")
	t.Cleanup(func() {
		for _, pid := range procsWith(mark) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	e.fake.SetStep(0, fakeapi.Step{ToolName: "Bash", ToolInput: map[string]any{"command": plantFilter(mark)}})

	s1 := e.newSession()
	w1 := e.dial(s1.ID, 0)
	w1.prompt("plant a filter")
	w1.waitFor(120*time.Second, "OUT ", "Done ·")
	out, _ := e.lastToolResult(2)
	t.Logf("planting printed:\n%s", out)
	t.Logf("the CLI's requests reach the model with Accept-Encoding %q", e.fake.Requests()[0].Header.Get("Accept-Encoding"))
	if !strings.Contains(out, "PLANTED") {
		t.Fatalf("the filter was not planted: %q", out)
	}
	e.sup.Stop(s1.ID)

	// Session 2: its worktree's checkout runs the filter.
	s2 := e.newSession()
	w2 := e.dial(s2.ID, 0)
	w2.prompt("work")
	wctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	if err := e.fake.WaitRequests(wctx, 3); err != nil {
		t.Fatalf("session 2 never asked the model: %v", err)
	}
	r2, ok := e.sup.Live(s2.ID)
	if !ok {
		t.Fatal("session 2 has no live run")
	}
	token := r2.Spec().ModelToken
	ran, _ := os.ReadFile(filepath.Join(repo, ".git", "filter-ran"))
	if len(ran) == 0 {
		// Parley's git runs no program the repository's config names
		// (TestRedteamRemovedMembersFilterStillRuns); what follows holds
		// should it ever run one again.
		t.Log("Parley's git did not run the planted filter")
	}
	// Give the daemon time to look at /proc while session 2's run is live.
	time.Sleep(3 * time.Second)
	release()
	w2.waitFor(60*time.Second, "Session two is working.")
	e.sup.Stop(s2.ID)
	time.Sleep(2 * time.Second)

	got, _ := os.ReadFile(harvest)
	if token != "" && strings.Contains(string(got), token) {
		t.Errorf("a daemon started by Parley's git read session 2's model token from /proc (harvested %d bytes)", len(got))
	}
	if pids := procsWith(mark); len(pids) > 0 {
		t.Errorf("%d processes started by the repository's filter outlived git, session 1's and session 2's runs (pids %v)", len(pids), pids)
	}
	e.healthy()
}

// plantFilter is session 1's Bash: a smudge filter for every file, in the
// repository's common git dir, whose first run starts a daemon (mark in
// its command line) that copies every parley-run- token it can read in
// /proc to $GIT_DIR/harvest.
func plantFilter(mark string) string {
	daemon := `while :; do for p in /proc/[0-9]*; do tr "\\0" "\\n" < $p/environ 2>/dev/null | grep parley-run-; done | sort -u >> "$G/harvest"; sleep 0.3; done`
	return fmt.Sprintf(`G=$(git rev-parse --path-format=absolute --git-common-dir) && mkdir -p "$G/info" && echo '* filter=evil' >> "$G/info/attributes" && cat > "$G/evil.sh" <<EOF
#!/bin/sh
export G="$G"
echo ran >> "\$G/filter-ran"
if mkdir "\$G/started" 2>/dev/null; then
  setsid sh -c '%s' %s </dev/null >/dev/null 2>&1 &
fi
exec cat
EOF
chmod +x "$G/evil.sh" && git config -f "$G/config" filter.evil.smudge "$G/evil.sh" && echo PLANTED`,
		strings.ReplaceAll(daemon, "$", `\$`), mark)
}

// TestRedteamRemovedMembersFilterStillRuns: a member's Claude plants a
// clean and smudge filter in the repository's own git dir (not in any
// file of the tree, so no diff or merge shows it). The member is removed.
// An owner then views the member's session and starts a session of their
// own: Parley's git, as the project's uid, must not run what the removed
// member planted (in uid mode it could still send the project's code
// anywhere: runs' network is not confined).
func TestRedteamRemovedMembersFilterStillRuns(t *testing.T) {
	t.Run("uid", func(t *testing.T) { removedMembersFilter(t, "uid") })
	t.Run("bwrap", func(t *testing.T) { removedMembersFilter(t, "bwrap") })
}

func removedMembersFilter(t *testing.T, isolation string) {
	plant := `G=$(git rev-parse --path-format=absolute --git-common-dir) && mkdir -p "$G/info" && echo '* filter=evil' >> "$G/info/attributes" && ` +
		`printf '#!/bin/sh\necho "$(id -u) $1" >> "%s/filter-ran"\nexec cat\n' "$G" > "$G/evil.sh" && chmod +x "$G/evil.sh" && ` +
		`git config -f "$G/config" filter.evil.smudge "$G/evil.sh smudge" && git config -f "$G/config" filter.evil.clean "$G/evil.sh clean" && echo PLANTED`
	sc := fakeapi.Scenario{
		{ToolName: "Bash", ToolInput: map[string]any{"command": plant}},
		{Text: "OUT " + fakeapi.ToolResultPlaceholder},
		{Text: "Owners session here."},
	}
	e := newEnv(t, sc, envOptions{quiet: true, isolation: isolation, guard: true, runConfig: confineRuns(t)})
	repo := gitRepo(t)
	e.useRepo(repo)
	owner := e.member("owner@example.com", "Owner", roleOwner)
	s1 := e.newSession()
	w1 := e.dial(s1.ID, 0)
	w1.prompt("plant")
	w1.waitFor(120*time.Second, "OUT ", "Done ·")
	if out, _ := e.lastToolResult(2); !strings.Contains(out, "PLANTED") {
		t.Fatalf("the filter was not planted: %q", out)
	}
	res := e.postAs(owner, fmt.Sprintf("/projects/%d/settings/members/%d/remove", e.project.ID, e.user.ID), nil)
	res.Body.Close()
	if res.StatusCode != http.StatusOK && res.StatusCode != http.StatusSeeOther {
		t.Fatalf("remove the member: %d", res.StatusCode)
	}
	ran := filepath.Join(repo, ".git", "filter-ran")
	os.Remove(ran)

	// The owner looks at the removed member's session, then starts one.
	e.getAs(owner, "/sessions/"+s1.ID)
	s2, err := e.st.CreateSessionBy(t.Context(), e.project.ID, "mine", owner.Name, owner.ID)
	if err != nil {
		t.Fatal(err)
	}
	w2 := e.dialAs(owner, s2.ID, 0)
	w2.prompt("my work")
	w2.waitFor(60*time.Second, "Owners session here.", "Done ·")
	if b, _ := os.ReadFile(ran); len(b) > 0 {
		t.Errorf("after the member's removal Parley's git ran the filter they planted %d times (uid, mode: %q)",
			strings.Count(string(b), "\n"), strings.Fields(string(b)))
	}
	e.healthy()
}

// TestRedteamGitFilterEscapesTheTaskLimit: a run's tasks are capped (512)
// in its cgroup, but Parley's git runs as the project's uid outside any
// run's cgroup. A clean filter planted by session 1's Bash starts 700
// processes when a page view's diff stages the worktree. The project's
// processes must stay under the run's task limit wherever git starts them.
func TestRedteamGitFilterEscapesTheTaskLimit(t *testing.T) {
	t.Run("uid", func(t *testing.T) { filterTasks(t, "uid") })
	t.Run("bwrap", func(t *testing.T) { filterTasks(t, "bwrap") })
}

func filterTasks(t *testing.T, isolation string) {
	mark := marker(t)
	plant := fmt.Sprintf(`G=$(git rev-parse --path-format=absolute --git-common-dir) && mkdir -p "$G/info" && echo '* filter=many' >> "$G/info/attributes" && `+
		`printf '#!/bin/bash\nif mkdir "%%s/spawned" 2>/dev/null; then for i in $(seq 700); do (exec -a %s sleep 15) & done; sleep 4; fi\nexec cat\n' "$G" > "$G/many.sh" && `+
		`git config -f "$G/config" filter.many.clean "bash $G/many.sh" && echo PLANTED`, mark)
	sc := fakeapi.Scenario{
		{ToolName: "Bash", ToolInput: map[string]any{"command": plant}},
		{Text: "OUT " + fakeapi.ToolResultPlaceholder},
	}
	e := newEnv(t, sc, envOptions{quiet: true, isolation: isolation, guard: true, runConfig: confineRuns(t)})
	repo := gitRepo(t)
	e.useRepo(repo)
	t.Cleanup(func() {
		for _, pid := range procsWith(mark) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt("plant")
	w.waitFor(120*time.Second, "OUT ", "Done ·")
	if out, _ := e.lastToolResult(2); !strings.Contains(out, "PLANTED") {
		t.Fatalf("the filter was not planted: %q", out)
	}
	e.sup.Stop(s.ID)
	done := make(chan int)
	go func() {
		most := 0
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			most = max(most, len(procsWith(mark)))
		}
		done <- most
	}()
	e.getAs(e.user, "/sessions/"+s.ID) // the page's diff stages the worktree: git add -A
	most := <-done
	_, err := os.Stat(filepath.Join(repo, ".git", "spawned"))
	t.Logf("the page view's git ran the filter: %v; at most %d of its processes ran at once", err == nil, most)
	if most > 512 {
		t.Errorf("Parley's git started %d processes for the project outside its runs' task limit of 512", most)
	}
	// Parley's git no longer runs the filter (TestRedteamRemovedMembersFilterStillRuns),
	// so the same 700 processes are started straight through the
	// confinement its git gets (gitOf's jail): whatever git may still be
	// made to run stays under the project's task limit.
	p, err := e.st.GetProject(t.Context(), e.project.ID)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-c", fmt.Sprintf("for i in $(seq 700); do (exec -a %s sleep 15) & done; sleep 4", mark))
	if err := e.srv.tools.ConfineTool(cmd, runner.Spec{ProjectID: p.ID, Workspace: repo, ConfigDir: ConfigDir(e.dataDir, p.ID),
		WritableDirs: []string{worktreesDir(e.dataDir, p.ID)}}); err != nil {
		t.Fatal(err)
	}
	go func() {
		most := 0
		for deadline := time.Now().Add(8 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			most = max(most, len(procsWith(mark)))
		}
		done <- most
	}()
	out, _ := cmd.CombinedOutput()
	most = <-done
	t.Logf("through git's confinement at most %d of 700 processes ran at once (%d bytes of errors)", most, len(out))
	if most == 0 {
		t.Fatalf("nothing started through git's confinement: nothing was tested: %s", out)
	}
	if most > 512 {
		t.Errorf("a program Parley's git runs for the project started %d processes, outside its runs' task limit of 512", most)
	}
	e.healthy()
}

// TestRedteamWorktreeSwappedForALink: a session's Bash replaces its own
// worktree directory (the project's uid owns the worktrees directory) with
// a link to a root-only directory. At the session's next run Parley, as
// root, writes the owner's instructions into the worktree's CLAUDE.md and
// gives the worktree to the project's uid: neither may reach through the
// link (no CLAUDE.md there, owner and mode unchanged).
func TestRedteamWorktreeSwappedForALink(t *testing.T) {
	t.Run("uid", func(t *testing.T) { worktreeSwap(t, "uid") })
	t.Run("bwrap", func(t *testing.T) { worktreeSwap(t, "bwrap") })
}

func worktreeSwap(t *testing.T, isolation string) {
	secret := filepath.Join(t.TempDir(), "rootonly")
	if err := os.Mkdir(secret, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(secret, "s.txt"), []byte("ROOT-ONLY"), 0o600); err != nil {
		t.Fatal(err)
	}
	swap := fmt.Sprintf(`wt=$(pwd -P); cd .. && mv "$wt" "$wt.moved" && ln -s %s "$wt" && echo SWAPPED`, secret)
	sc := fakeapi.Scenario{
		{ToolName: "Bash", ToolInput: map[string]any{"command": swap}},
		{Text: "OUT " + fakeapi.ToolResultPlaceholder},
		{Text: "Second run here."},
	}
	e := newEnv(t, sc, envOptions{quiet: true, isolation: isolation, guard: true, runConfig: confineRuns(t)})
	repo := gitRepo(t)
	e.useRepo(repo)
	p, err := e.st.GetProject(t.Context(), e.project.ID)
	if err != nil {
		t.Fatal(err)
	}
	p.Instructions = "OWNER-INSTRUCTIONS"
	if err := e.st.UpdateProjectSettings(t.Context(), p.ID, p.ProjectSettings, repo); err != nil {
		t.Fatal(err)
	}
	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt("swap")
	w.waitFor(120*time.Second, "OUT ", "Done ·")
	out, _ := e.lastToolResult(2)
	if isolation == "bwrap" && strings.Contains(out, "Device or resource busy") {
		return // bubblewrap binds the worktree: it cannot be moved at all
	}
	if !strings.Contains(out, "SWAPPED") {
		t.Fatalf("the worktree was not swapped: %q", out)
	}
	e.sup.Stop(s.ID)
	w.prompt("again")
	time.Sleep(10 * time.Second) // the next run starts, or fails to
	ents, _ := os.ReadDir(secret)
	fi, err := os.Stat(secret)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	t.Logf("the root-only directory: uid %d, mode %v, %d entries", st.Uid, fi.Mode(), len(ents))
	if st.Uid != 0 || fi.Mode().Perm() != 0o700 {
		t.Errorf("root gave the link's target away: uid %d, mode %v", st.Uid, fi.Mode())
	}
	if _, err := os.Lstat(filepath.Join(secret, "CLAUDE.md")); err == nil {
		t.Errorf("root wrote CLAUDE.md through the link")
	}
	e.healthy()
}

// TestRedteamGitFilterReadsLiveRunsTokens: each run has its own pid
// namespace, so one session's Bash cannot read another's environment
// (TestRedteamSessionReadsAnotherSessionsToken). Parley's git for the
// project runs as the same uid with the host's /proc: a clean filter
// planted by session 1 reads every /proc/<pid>/environ while a page view's
// diff runs, and session 2's run is live. It must not get session 2's
// model token.
func TestRedteamGitFilterReadsLiveRunsTokens(t *testing.T) {
	t.Run("uid", func(t *testing.T) { filterReadsTokens(t, "uid") })
	t.Run("bwrap", func(t *testing.T) { filterReadsTokens(t, "bwrap") })
}

func filterReadsTokens(t *testing.T, isolation string) {
	hold := make(chan struct{})
	defer close(hold)
	plant := `G=$(git rev-parse --path-format=absolute --git-common-dir) && mkdir -p "$G/info" && echo '* filter=peek' >> "$G/info/attributes" && ` +
		`printf '#!/bin/sh\nfor p in /proc/[0-9]*; do tr "\\\\0" "\\\\n" < $p/environ 2>/dev/null; done | grep parley-run- >> "%s/harvest"\necho "ran under $(cat /proc/1/comm) seeing $(ls -d /proc/[0-9]* | wc -l)" >> "%s/harvest"\nexec cat\n' "$G" "$G" > "$G/peek.sh" && ` +
		`git config -f "$G/config" filter.peek.clean "sh $G/peek.sh" && cat "$G/peek.sh" && echo PLANTED`
	sc := fakeapi.Scenario{
		{ToolName: "Bash", ToolInput: map[string]any{"command": plant}},
		{Text: "OUT " + fakeapi.ToolResultPlaceholder},
		{Text: "Session two holds.", Hold: hold},
	}
	e := newEnv(t, sc, envOptions{quiet: true, isolation: isolation, guard: true, runConfig: confineRuns(t)})
	repo := gitRepo(t)
	e.useRepo(repo)
	s1 := e.newSession()
	w1 := e.dial(s1.ID, 0)
	w1.prompt("plant")
	w1.waitFor(120*time.Second, "OUT ", "Done ·")
	out, _ := e.lastToolResult(2)
	t.Logf("planting printed:\n%s", out)
	if !strings.Contains(out, "PLANTED") {
		t.Fatalf("the filter was not planted: %q", out)
	}
	e.sup.Stop(s1.ID)
	s2 := e.newSession()
	w2 := e.dial(s2.ID, 0)
	w2.prompt("hold")
	wctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	if err := e.fake.WaitRequests(wctx, 3); err != nil {
		t.Fatal(err)
	}
	r2, ok := e.sup.Live(s2.ID)
	if !ok {
		t.Fatal("session 2 has no live run")
	}
	harvest := filepath.Join(repo, ".git", "harvest")
	os.Remove(harvest)
	e.getAs(e.user, "/sessions/"+s1.ID) // the page's diff: git add -A runs the clean filter
	got, err := os.ReadFile(harvest)
	if err != nil {
		t.Log("the page view's git did not run the filter (TestRedteamRemovedMembersFilterStillRuns)")
	}
	t.Logf("the filter read %d tokens; its runs:\n%s", strings.Count(string(got), "parley-run-"), grepLines(string(got), "ran under"))
	if strings.Contains(string(got), r2.Spec().ModelToken) {
		t.Errorf("a filter run by Parley's git read live session 2's model token from /proc")
	}
}

// grepLines are the lines of s that hold sub.
func grepLines(s, sub string) string {
	var b strings.Builder
	for line := range strings.Lines(s) {
		if strings.Contains(line, sub) {
			b.WriteString(line)
		}
	}
	return b.String()
}
