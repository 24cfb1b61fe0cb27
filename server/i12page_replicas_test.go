package server

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"parley/runner/fakeapi"
)

// TestFaultRunFilesSweptWhenReplicaLapses SIGKILLs a replica whose run
// waits on an ask: the run's token files (ask_user config, --mcp-config)
// stay behind. The replica that is already running when the killed one's
// lease lapses takes its sessions over and removes those files; nothing
// waits for a restart of the killed replica.
func TestFaultRunFilesSweptWhenReplicaLapses(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{bashStep("touch y")}, envOptions{quiet: true})
	a, b := e.startReplica("A"), e.startReplica("B")
	s := e.newSession()
	wa := e.dialReplica(a, e.user, s.ID)
	wa.prompt("make y")
	e.waitInput(wa, s.ID)
	dir := filepath.Join(e.dataDir, "run", a.id)
	files := func() []string {
		t.Helper()
		m, err := filepath.Glob(filepath.Join(dir, "*"))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	if len(files()) == 0 {
		t.Fatalf("replica A's live run has no files in %s; the test cannot see a sweep", dir)
	}
	var pid int
	e.queryRow(`SELECT pid FROM runs WHERE session_id = $1`, []any{s.ID}, &pid)
	t.Cleanup(func() { _ = syscall.Kill(-pid, syscall.SIGKILL) })
	a.stop(syscall.SIGKILL)
	_ = syscall.Kill(-pid, syscall.SIGKILL) // the crash took the run too

	// A's lease lapses after PARLEY_LEASE_TTL (2 s); B's next heartbeat
	// takes it over. This waits on the filesystem, with a deadline.
	deadline := time.Now().Add(60 * time.Second)
	for len(files()) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("replica A's run files are still there a minute after it was killed: %v", files())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("the lapsed replica's directory went too (%v); only its files may go", err)
	}
	_ = b // B had to be running before A lapsed: its start-up sweep saw A live
}

// TestFaultPageSurvivesServerRestarts keeps one Chromium page open on a
// `parley serve` that is stopped (SIGTERM: the socket is closed by the
// server) and then killed (SIGKILL: the connection just dies), each time
// started again on the same address. The page reconnects by itself each
// time — no reload — catches up, and a prompt typed in it afterwards is
// answered.
func TestFaultPageSurvivesServerRestarts(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "Reply one."}, {Text: "Reply two."}, {Text: "Reply three."}}, envOptions{quiet: true})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := "PARLEY_ADDR=" + ln.Addr().String()
	ln.Close()
	r := e.startReplica("A", addr)
	s := e.newSession()
	ctx := e.browser(t)
	send := func(text, reply string, turns int) {
		t.Helper()
		step(t, ctx, "send "+text,
			pollJS(`document.getElementById('conn').dataset.state === 'live'`),
			chromedp.SetValue(`#prompt`, text, chromedp.ByID),
			chromedp.Evaluate(`document.getElementById('prompt-form').requestSubmit(); true`, nil),
			pollJS(fmt.Sprintf(`document.querySelectorAll('#events .turn-result').length === %d`, turns)),
			pollJS(fmt.Sprintf(`document.getElementById('events').innerText.includes(%q)`, reply)),
		)
	}
	step(t, ctx, "open the session", chromedp.Navigate(r.url+"/sessions/"+s.ID),
		pollJS(`document.getElementById('conn').dataset.state === 'live'`), chromedp.Evaluate(countOpens, nil))
	send("first", "Reply one.", 1)
	for i, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		var pid int
		e.queryRow(`SELECT coalesce(max(pid), 0) FROM runs WHERE session_id = $1 AND ended_at IS NULL`, []any{s.ID}, &pid)
		if pid > 0 {
			t.Cleanup(func() { _ = syscall.Kill(-pid, syscall.SIGKILL) })
		}
		r.stop(sig)
		step(t, ctx, fmt.Sprintf("the page sees the server go (%v)", sig),
			pollJS(`document.getElementById('conn').dataset.state === 'offline'`))
		r = e.startReplica(fmt.Sprintf("A%d", i+2), addr)
		step(t, ctx, fmt.Sprintf("the page is live again after %v", sig),
			pollJS(fmt.Sprintf(`window.__opens === %d && document.getElementById('conn').dataset.state === 'live'`, i+1)))
		send([]string{"second", "third"}[i], []string{"Reply two.", "Reply three."}[i], i+2)
	}
	var text string
	step(t, ctx, "read the page", chromedp.Text(`#events`, &text, chromedp.ByID))
	for _, want := range []string{"Reply one.", "Reply two.", "Reply three."} {
		if n := strings.Count(text, want); n != 1 {
			t.Errorf("%q appears %d times:\n%s", want, n, text)
		}
	}
}
