package server

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/jackc/pgx/v5"

	"parley/runner/fakeapi"
)

// parleyBin builds the parley binary once per test binary, with
// parley-guard beside it as the Dockerfile installs them (its runs' guard).
var parleyBin = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "parley-bin-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "parley")
	out, err := exec.Command("go", "build", "-o", bin, "../cmd/parley").CombinedOutput()
	if err != nil {
		return "", &exec.ExitError{Stderr: out}
	}
	out, err = exec.Command("go", "build", "-o", filepath.Join(dir, "parley-guard"), "../cmd/parley-guard").CombinedOutput()
	if err != nil {
		return "", &exec.ExitError{Stderr: out}
	}
	return bin, nil
})

// replica is one `parley serve` process of a test, on the env's database,
// data directory and fake model.
type replica struct {
	t     testing.TB
	name  string
	cmd   *exec.Cmd
	url   string
	id    string
	ended chan struct{}
	mu    sync.Mutex
	logs  []string // what it logged so far (waitLog)
}

// pause stops the replica and its run's process group pgid (SIGSTOP: the
// CLI would go on streaming otherwise, and its transcript would show more
// than the replica wrote); the returned func wakes them, and may be called
// again.
func (r *replica) pause(pgid int) (wake func()) {
	r.t.Helper()
	if err := r.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		r.t.Fatal(err)
	}
	if err := syscall.Kill(-pgid, syscall.SIGSTOP); err != nil {
		r.t.Fatal(err)
	}
	return func() {
		_ = r.cmd.Process.Signal(syscall.SIGCONT)
		_ = syscall.Kill(-pgid, syscall.SIGCONT)
	}
}

// waitLog waits until the replica logged a line holding sub.
func (r *replica) waitLog(timeout time.Duration, sub string) {
	r.t.Helper()
	waitUntil(r.t, timeout, r.name+" to log "+strconv.Quote(sub), func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, l := range r.logs {
			if strings.Contains(l, sub) {
				return true
			}
		}
		return false
	})
}

var listeningLine = regexp.MustCompile(`msg="parley listening" url=(\S+) replica=(\S+)`)

// startReplica starts a `parley serve` and waits until it listens; extra
// is more of its environment ("KEY=value"; later entries win: PARLEY_ISOLATION=uid, say).
func (e *env) startReplica(name string, extra ...string) *replica {
	e.t.Helper()
	bin, err := parleyBin()
	if err != nil {
		e.t.Fatalf("build parley: %v", err)
	}
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(), "DATABASE_URL="+e.dbURL, "PARLEY_ADDR=127.0.0.1:0", "PARLEY_DATA_DIR="+e.dataDir,
		"PARLEY_CLAUDE_BIN="+fakeapi.ClaudeBin(e.t), "PARLEY_LEASE_TTL=2", "PARLEY_LOG_LEVEL=info", "PARLEY_IDLE_TIMEOUT=0",
		"PARLEY_ISOLATION=off") // as the in-process harness runs by default
	// The CLI's config dir is the per-project one under the shared data
	// directory (one shared CLAUDE_CONFIG_DIR and per-project uids exclude
	// each other).
	for _, kv := range e.fake.Env(filepath.Join(e.dataDir, "claude")) {
		if !strings.HasPrefix(kv, "CLAUDE_CONFIG_DIR=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, extra...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	r := &replica{t: e.t, name: name, cmd: cmd, ended: make(chan struct{})}
	ready := make(chan [2]string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			e.t.Log(name + ": " + line)
			r.mu.Lock()
			r.logs = append(r.logs, line)
			r.mu.Unlock()
			if m := listeningLine.FindStringSubmatch(line); m != nil {
				ready <- [2]string{m[1], m[2]}
			}
		}
		_ = cmd.Wait()
		close(r.ended)
	}()
	select {
	case m := <-ready:
		r.url, r.id = m[0], m[1]
	case <-r.ended:
		e.t.Fatalf("replica %s exited before listening", name)
	case <-time.After(60 * time.Second):
		e.t.Fatalf("replica %s did not start listening", name)
	}
	e.t.Cleanup(func() { r.stop(syscall.SIGTERM) })
	return r
}

// stop signals the replica and waits for it to end.
func (r *replica) stop(sig syscall.Signal) {
	select {
	case <-r.ended:
		return
	default:
	}
	_ = r.cmd.Process.Signal(sig)
	select {
	case <-r.ended:
	case <-time.After(30 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.ended
	}
}

// dialReplica opens the session's WebSocket on replica r as u.
func (e *env) dialReplica(r *replica, u *testUser, sessionID string) *ws {
	e.t.Helper()
	url := "ws" + strings.TrimPrefix(r.url, "http") + "/sessions/" + sessionID + "/ws"
	h := http.Header{"Origin": {r.url}, "Cookie": {sessionCookie + "=" + u.Cookie}}
	conn, _, err := websocket.DefaultDialer.Dial(url, h)
	if err != nil {
		e.t.Fatalf("dial %s: %v", url, err)
	}
	w := &ws{t: e.t, conn: conn, frames: make(chan string, 4096)}
	go func() {
		defer close(w.frames)
		for {
			_, b, err := conn.ReadMessage()
			if err != nil {
				return
			}
			w.frames <- string(b)
		}
	}()
	e.t.Cleanup(func() { conn.Close() })
	w.send(map[string]any{"action": "hello", "after": 0})
	return w
}

// owner returns the replica id holding the session's lease.
func (e *env) owner(sessionID string) string {
	e.t.Helper()
	id, err := e.st.Owner(e.t.Context(), sessionID)
	if err != nil {
		e.t.Fatal(err)
	}
	return id
}

// runsOf counts the session's runs, and those still open.
func (e *env) runsOf(sessionID string) (all, open int) {
	e.t.Helper()
	e.queryRow(`SELECT count(*), count(*) FILTER (WHERE ended_at IS NULL) FROM runs WHERE session_id = $1`,
		[]any{sessionID}, &all, &open)
	return all, open
}

// wantContiguousLog fails unless the session's log is numbered 1..n.
func (e *env) wantContiguousLog(sessionID string) {
	e.t.Helper()
	evs, err := e.st.EventsAfter(e.t.Context(), sessionID, 0, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	for i, ev := range evs {
		if ev.Seq != int64(i+1) {
			e.t.Fatalf("event %d has seq %d: the log has a gap or a duplicate", i+1, ev.Seq)
		}
	}
}

// TestReplicasRouteToOwner runs two, then three `parley serve` processes on
// one database. A prompt through A opens an ask; a third replica starting
// leaves A's run alone; the answer sent through B reaches A's waiting
// process as the tool's result, once; a prompt through B reaches the same
// process; B's page shows what A's run writes.
func TestReplicasRouteToOwner(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{bashStep("touch x"), {Text: "Result: " + fakeapi.ToolResultPlaceholder},
		{Text: "second reply through B"}}, envOptions{quiet: true})
	a, b := e.startReplica("A"), e.startReplica("B")
	s := e.newSession()
	wa, wb := e.dialReplica(a, e.user, s.ID), e.dialReplica(b, e.user, s.ID)
	wa.prompt("make x")
	wb.waitFor(90*time.Second, `class="item ask"`) // B's page sees A's ask live
	if got := e.owner(s.ID); got != a.id {
		t.Fatalf("owner %q, want A (%s)", got, a.id)
	}
	ins, err := e.st.PendingInputs(t.Context(), s.ID)
	if err != nil || len(ins) != 1 {
		t.Fatalf("pending inputs = %v, %v; want one", ins, err)
	}

	c := e.startReplica("C")
	if all, open := e.runsOf(s.ID); all != 1 || open != 1 {
		t.Fatalf("after C started: %d runs, %d open; want A's one run still open", all, open)
	}
	if got := e.owner(s.ID); got != a.id {
		t.Fatalf("after C started the owner is %q, want A (%s)", got, a.id)
	}

	wb.answer(ins[0], map[string]any{"decision": "allow", "command": "touch x"})
	e.wantToolResult(2, "(Bash completed with no output)", false)
	wb.waitFor(90*time.Second, "Allowed by you", "Done ·")
	if _, err := os.Stat(filepath.Join(e.workspace(s), "x")); err != nil {
		t.Errorf("the allowed command did not run: %v", err)
	}

	wb.prompt("second, through B")
	wc := e.dialReplica(c, e.user, s.ID)
	wc.waitFor(90*time.Second, "second reply through B")
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	if err := e.fake.WaitRequests(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if got := e.fake.Requests()[2].LastUserText(); !strings.Contains(got, "second, through B") {
		t.Errorf("the model's third request ends with %q, want the prompt sent through B", got)
	}
	if n := len(e.fake.Requests()); n != 3 {
		t.Errorf("the model got %d requests, want 3 (each prompt and answer once)", n)
	}
	if all, _ := e.runsOf(s.ID); all != 1 {
		t.Errorf("%d runs, want 1: B or C started a process of its own", all)
	}
	e.wantContiguousLog(s.ID)
}

// TestReplicaTakeoverAfterKill kills the owner of a session while its ask
// is open: another replica takes the session over, the answer sent to it
// resumes the conversation (--resume) and reaches the model.
func TestReplicaTakeoverAfterKill(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{bashStep("touch y"), {Text: "Resumed after the takeover."}},
		envOptions{quiet: true})
	a, b := e.startReplica("A"), e.startReplica("B")
	s := e.newSession()
	wa := e.dialReplica(a, e.user, s.ID)
	wa.prompt("make y")
	in := e.waitInput(wa, s.ID)
	var pid int
	e.queryRow(`SELECT pid FROM runs WHERE session_id = $1`, []any{s.ID}, &pid)
	t.Cleanup(func() { _ = syscall.Kill(-pid, syscall.SIGKILL) }) // A's orphaned claude, if still there
	a.stop(syscall.SIGKILL)

	wb := e.dialReplica(b, e.user, s.ID)
	wb.answer(in, map[string]any{"decision": "allow", "command": "touch y"})
	wb.waitFor(90*time.Second, "Resumed after the takeover.")
	if got := e.owner(s.ID); got != b.id {
		t.Errorf("owner %q, want B (%s)", got, b.id)
	}
	reqs := e.fake.Requests()
	if len(reqs) < 2 {
		t.Fatalf("the model got %d requests, want the resumed turn", len(reqs))
	}
	if got := reqs[len(reqs)-1].LastUserText(); !strings.Contains(got, "touch y") || !strings.Contains(got, "[Parley]") {
		t.Errorf("the resumed turn is %q, want the late answer allowing touch y", got)
	}
	got, err := e.st.GetInput(t.Context(), in.ID)
	if err != nil || got.Status != "answered" {
		t.Errorf("input = %+v, %v; want answered", got, err)
	}
	e.wantContiguousLog(s.ID)
}

// queryRow runs a test's own query on the env's database.
func (e *env) queryRow(sql string, args []any, dest ...any) {
	e.t.Helper()
	conn, err := pgx.Connect(e.t.Context(), e.dbURL)
	if err != nil {
		e.t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if err := conn.QueryRow(e.t.Context(), sql, args...).Scan(dest...); err != nil {
		e.t.Fatal(err)
	}
}
