package server

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"parley/runner"
	"parley/runner/fakeapi"
	"parley/transcript"
)

// slowStdout is a claude wrapper that hands the CLI's stdout on a line
// every 200 ms: Parley's log then lags behind what the CLI has done (and
// written to its transcript), as when Postgres is slow. It is also a
// wrapper, the case where the parent-death signal reaches only the
// wrapper and claude itself went on.
const slowStdout = `#!/bin/sh
%q "$@" | while IFS= read -r line; do printf '%%s\n' "$line"; sleep 0.2; done
`

// TestFaultKillMidStream SIGKILLs `parley serve` while Parley's log lags a
// streamed reply that the CLI has finished: nothing of the run survives
// it; a restarted server finds in its log every assistant message, tool
// call and result of Claude's transcript, in order, the missing ones marked
// recovered; the session is idle, and the page (Chromium) shows the whole
// reply and does not say Claude is working.
func TestFaultKillMidStream(t *testing.T) {
	final := "The whole reply, streamed in many small parts, ends here with the last words."
	e := newEnv(t, fakeapi.Scenario{
		{Text: "Let me look.", ToolName: "Bash", ToolInput: map[string]any{"command": "echo hi", "description": "say hi"}},
		{Text: final, Chunks: 30, ChunkDelay: 20 * time.Millisecond},
	}, envOptions{quiet: true})
	wrapper := filepath.Join(t.TempDir(), "claude")
	if err := os.WriteFile(wrapper, fmt.Appendf(nil, slowStdout, fakeapi.ClaudeBin(t)), 0o755); err != nil {
		t.Fatal(err)
	}
	a := e.startReplica("A", "PARLEY_CLAUDE_BIN="+wrapper)
	s := e.newSession()
	wa := e.dialReplica(a, e.user, s.ID)
	wa.prompt("go")

	var path string
	waitUntil(t, 90*time.Second, "the transcript to hold the final reply", func() bool {
		path = e.transcriptPath(s.ClaudeSessionID)
		b, _ := os.ReadFile(path)
		return path != "" && strings.Contains(string(b), final)
	})
	var pid int
	e.queryRow(`SELECT pid FROM runs WHERE session_id = $1`, []any{s.ID}, &pid)
	tree := procTree(pid)
	a.stop(syscall.SIGKILL)
	if alive := survivors(tree, 15*time.Second); len(alive) > 0 {
		t.Errorf("processes of the run outlived the SIGKILLed server: %q", alive)
	}
	for _, p := range tree {
		_ = syscall.Kill(p, syscall.SIGKILL) // whatever survived, for the rest of the test
	}
	want := transcriptSteps(t, path)
	before := e.logSteps(s.ID)
	if len(before) >= len(want) {
		t.Fatalf("the log already held all %d steps before the kill: the fault was not injected", len(want))
	}
	t.Logf("before the restart the log holds %d of the transcript's %d steps (%d events)", len(before), len(want), len(e.events(s.ID)))

	b := e.startReplica("B")
	wb := e.dialReplica(b, e.user, s.ID)
	wb.waitFor(90*time.Second, "after a restart", "status-ended")
	got := e.logSteps(s.ID)
	if len(got) != len(want) {
		t.Fatalf("the log holds %d steps, the transcript %d:\nlog %v\ntranscript %v", len(got), len(want), got, want)
	}
	t.Logf("after the restart the log holds %d of %d steps (%d events)", len(got), len(want), len(e.events(s.ID)))
	recovered := 0
	for i := range want {
		if got[i].UUID != want[i].UUID || got[i].Type != want[i].Type {
			t.Errorf("step %d: log %+v, transcript %+v", i, got[i], want[i])
		}
		if i >= len(before) && !got[i].Recovered {
			t.Errorf("step %d was added after the crash but is not marked recovered", i)
		}
		if got[i].Recovered {
			recovered++
		}
	}
	if recovered != len(want)-len(before) {
		t.Errorf("%d steps marked recovered, want %d", recovered, len(want)-len(before))
	}
	sess, err := e.st.GetSession(t.Context(), s.ID)
	if err != nil || sess.Status == "running" {
		t.Errorf("session status %q (%v), want idle", sess.Status, err)
	}
	e.wantContiguousLog(s.ID)

	// A third start reconciles again and adds nothing: opening the page
	// on C starts the session's process ahead of a message (ahead.go),
	// whose start reconciles once more; only that run's own record is new.
	n := len(e.events(s.ID))
	starts := count(e.events(s.ID), runner.TypeRunStarted)
	c := e.startReplica("C")
	wc := e.dialReplica(c, e.user, s.ID)
	wc.waitFor(60*time.Second, final)
	waitUntil(t, 60*time.Second, "C to start the process ahead", func() bool {
		return count(e.events(s.ID), runner.TypeRunStarted) > starts
	})
	time.Sleep(time.Second) // what a reconcile would add comes with the start
	if added := slices.DeleteFunc(e.events(s.ID)[n:], func(t string) bool { return t == runner.TypeRunStarted }); len(added) != 0 {
		t.Errorf("another start added %v: reconciling is not idempotent", added)
	}

	ctx := e.browser(t)
	var text, status string
	var live int
	step(t, ctx, "open the session on the restarted server",
		chromedp.Navigate(b.url+"/sessions/"+s.ID),
		chromedp.Poll(fmt.Sprintf(`document.getElementById("events").innerText.includes(%q)`, final), nil),
		chromedp.Text(`#events`, &text, chromedp.ByID),
		chromedp.Text(`#session-status`, &status, chromedp.ByID),
		chromedp.Evaluate(`document.querySelectorAll("#events .live").length`, &live),
	)
	if strings.Contains(status, "working") || strings.Contains(text, "Claude is working") {
		t.Errorf("the page says %q: Claude is not working", status)
	}
	if live != 0 {
		t.Errorf("%d streamed replies are still open in the page", live)
	}
	for _, w := range []string{"Let me look.", transcript.RecoveredNotice, final} {
		if !strings.Contains(text, w) {
			t.Errorf("the page lacks %q:\n%s", w, text)
		}
	}
}

// events returns the session's whole log.
func (e *env) events(sessionID string) []string {
	e.t.Helper()
	evs, err := e.st.EventsAfter(e.t.Context(), sessionID, 0, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.Type
	}
	return out
}

// TestFaultKillWithAskOpen SIGKILLs `parley serve` while an ask_user
// question is open, in each isolation mode, and with PARLEY_CLAUDE_BIN a
// wrapper script (the parent-death signal then reaches the wrapper only,
// and claude, busy in the ask, used to go on): no process of the run
// survives (so nothing goes on unsupervised), the model never reads that
// the user could not be reached, and the answer given after a restart
// reaches the model exactly once.
func TestFaultKillWithAskOpen(t *testing.T) {
	for _, mode := range []string{"off", "wrapper", "bwrap", "uid"} {
		t.Run(mode, func(t *testing.T) {
			if mode == "uid" && os.Geteuid() != 0 {
				t.Skip("per-project uids need root")
			}
			e := newEnv(t, fakeapi.Scenario{
				{Text: "I need a decision.", ToolName: askTool, ToolInput: colourQuestion(false)},
				{Text: "Thanks, going with it."},
			}, envOptions{quiet: true})
			if mode == "uid" || (mode == "bwrap" && os.Geteuid() == 0) {
				// t.TempDir's parent is private to root; the runs (as root,
				// bwrap starts them as the project's uid too) must enter it.
				if err := os.Chmod(filepath.Dir(e.dataDir), 0o711); err != nil {
					t.Fatal(err)
				}
			}
			env := []string{"PARLEY_ISOLATION=" + mode}
			if mode == "wrapper" {
				wrapper := filepath.Join(t.TempDir(), "claude")
				script := fmt.Appendf(nil, "#!/bin/sh\n%q \"$@\"\n", fakeapi.ClaudeBin(t))
				if err := os.WriteFile(wrapper, script, 0o755); err != nil {
					t.Fatal(err)
				}
				env = []string{"PARLEY_ISOLATION=off", "PARLEY_CLAUDE_BIN=" + wrapper}
			}
			a := e.startReplica("A", env...)
			s := e.newSession()
			wa := e.dialReplica(a, e.user, s.ID)
			wa.prompt("pick a colour")
			in := e.waitInput(wa, s.ID)
			var pid int
			e.queryRow(`SELECT pid FROM runs WHERE session_id = $1`, []any{s.ID}, &pid)
			tree := procTree(pid)
			if len(tree) < 2 { // ask_user goes over Parley's HTTP endpoint: no ask server process
				t.Fatalf("the run's process tree is %v: want the guard and claude", tree)
			}
			if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", tree[0])); filepath.Base(exe) != "parley-guard" {
				t.Errorf("the run's guard runs %q, want the small parley-guard installed beside parley", exe)
			}
			asked := len(e.fake.Requests())
			a.stop(syscall.SIGKILL)
			if alive := survivors(tree, 15*time.Second); len(alive) > 0 {
				t.Errorf("processes of the run outlived the SIGKILLed server: %q", alive)
			}
			for _, p := range tree {
				_ = syscall.Kill(p, syscall.SIGKILL)
			}

			b := e.startReplica("B", env...)
			wb := e.dialReplica(b, e.user, s.ID)
			if n := len(e.fake.Requests()); n != asked {
				t.Errorf("the model got %d requests while no Parley supervised the run", n-asked)
			}
			wb.answer(in, map[string]any{"choice": "Blue"})
			wb.waitFor(90*time.Second, "Thanks, going with it.")
			delivered := 0
			for i, r := range e.fake.Requests() {
				last := r.LastUserText()
				if _, res, _, ok := r.LastToolResult(); ok {
					last += res
				}
				if strings.Contains(last, "could not reach") {
					t.Errorf("request %d told the model: %q", i, last)
				}
				if i >= asked && strings.Contains(last, "Blue") {
					delivered++
				}
			}
			if delivered != 1 {
				t.Errorf("the answer reached the model %d times, want once", delivered)
			}
			e.wantContiguousLog(s.ID)
		})
	}
}
