package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"parley/runner/fakeapi"
	"parley/store"
)

// Red-team attacks on issue 27's confinement that the other attack files
// do not cover: each plays a member's Claude with a shell as the
// project's uid, through the real CLI, as serve runs it.

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
	t.Run("uid", func(t *testing.T) { gatewayConnections(t, "uid") })
	t.Run("bwrap", func(t *testing.T) { gatewayConnections(t, "bwrap") })
}

func gatewayConnections(t *testing.T, isolation string) {
	const conns, bound = 4000, 1000
	cmd := fmt.Sprintf(`ulimit -n %d; hp=${ANTHROPIC_BASE_URL#http://}; hp=${hp%%%%/*}; h=${hp%%:*}; p=${hp##*:}; n=0; `+
		`for i in $(seq %d); do exec {fd}<>/dev/tcp/$h/$p || break; printf 'GET /held HTTP/1.1\r\nHost: x\r\n\r\n' >&$fd; n=$((n+1)); done; `+
		`echo $n > held.txt; sleep 25; echo "held $n"`, conns+200, conns)
	sc := fakeapi.Scenario{
		{ToolName: "Bash", ToolInput: map[string]any{"command": cmd, "timeout": 360000}},
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
	// 4,000 connects through sandbox-relay took over 90 s once on a
	// loaded 2-core machine: the waits are generous, and cost nothing when
	// the run is quick.
	for deadline := time.Now().Add(300 * time.Second); n == ""; time.Sleep(200 * time.Millisecond) {
		b, _ := os.ReadFile(held)
		n = strings.TrimSpace(string(b))
		if time.Now().After(deadline) {
			t.Fatal("the run never reported its connections")
		}
	}
	time.Sleep(12 * time.Second)
	during := openFiles()
	e.healthy()
	w.waitFor(300*time.Second, "OUT ", "Done ·")
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
	e, _, out := oneBash(t, isolation, cmd)
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
	e, s, out := oneBash(t, isolation, cmd)
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
	e := newEnv(t, sc, envOptions{quiet: true, isolation: isolation, guard: true, runConfig: confineRuns(t), askStdio: true})
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

// oneBash starts a server confined as serve confines runs, whose member's
// Claude runs cmd in one Bash call, Bash being allowed; it returns the
// session and what the call printed.
func oneBash(t *testing.T, isolation, cmd string) (*env, store.Session, string) {
	t.Helper()
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
	w.prompt("run the attack")
	w.waitFor(300*time.Second, "OUT ", "Done ·")
	out, _ := e.lastToolResult(2)
	return e, s, out
}

// TestRedteamTokensDieWithTheRun: a run's Bash keeps its model token and
// its ask relay token in the workspace; the session is stopped and
// prompted again, and the new run's Bash uses the old tokens against the
// gateway and the ask relay. Both are refused.
func TestRedteamTokensDieWithTheRun(t *testing.T) {
	keep := `T=$(sed -n 's/.*"token": *"\([^"]*\)".*/\1/p' "$ASK_USER_CONFIG"); echo "$ANTHROPIC_API_KEY $T" > old-tokens; echo KEPT`
	use := `read M A < old-tokens; U=$(sed -n 's/.*"url": *"\([^"]*\)".*/\1/p' "$ASK_USER_CONFIG"); ` +
		`echo "MODEL $(curl -s -o /dev/null -w '%{http_code}' -H "x-api-key: $M" -H 'content-type: application/json' -d '{"model":"claude-haiku-4-5","max_tokens":5,"messages":[{"role":"user","content":"old token"}]}' "$ANTHROPIC_BASE_URL/v1/messages")"; ` +
		`echo "ASK $(curl -s -o /dev/null -w '%{http_code}' --max-time 5 -X POST -H "Authorization: Bearer $A" -d '{"question":"q"}' "$U")"; ` +
		`[ "$M" != "$ANTHROPIC_API_KEY" ] && echo NEW-TOKEN; echo USED`
	sc := fakeapi.Scenario{
		{ToolName: "Bash", ToolInput: map[string]any{"command": keep}},
		{Text: "OUT " + fakeapi.ToolResultPlaceholder},
		{ToolName: "Bash", ToolInput: map[string]any{"command": use}},
		{Text: "OUT2 " + fakeapi.ToolResultPlaceholder},
	}
	for _, isolation := range []string{"uid", "bwrap"} {
		t.Run(isolation, func(t *testing.T) {
			e := newEnv(t, sc, envOptions{quiet: true, isolation: isolation, guard: true, runConfig: confineRuns(t), askStdio: true})
			settings := e.project.ProjectSettings
			settings.AllowedTools = []string{"Bash"}
			if err := e.st.UpdateProjectSettings(t.Context(), e.project.ID, settings, ""); err != nil {
				t.Fatal(err)
			}
			s := e.newSession()
			w := e.dial(s.ID, 0)
			w.prompt("keep the tokens")
			w.waitFor(120*time.Second, "OUT ", "Done ·")
			if out, _ := e.lastToolResult(2); !strings.Contains(out, "KEPT") {
				t.Fatalf("the tokens were not kept: %q", out)
			}
			e.sup.Stop(s.ID)
			w.prompt("use the old tokens")
			w.waitFor(120*time.Second, "OUT2 ", "Done ·")
			out, _ := e.lastToolResult(4)
			t.Logf("the new run printed:\n%s", out)
			if !strings.Contains(out, "NEW-TOKEN") || !strings.Contains(out, "USED") {
				t.Fatalf("the new run did not get new tokens, or the probe did not run: %q", out)
			}
			for _, want := range []string{"MODEL 401", "ASK 403"} {
				if !strings.Contains(out, want) {
					t.Errorf("an ended run's token was not refused: want %q", want)
				}
			}
			if n := len(sideRequestsOf(e, "old token")); n > 0 {
				t.Errorf("%d requests with an ended run's token reached the model", n)
			}
		})
	}
}
