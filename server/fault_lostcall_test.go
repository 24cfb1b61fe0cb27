package server

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"parley/runner/fakeapi"
)

// TestFaultCrashDuringAllowedCommand SIGKILLs `parley serve` while a Bash
// command a member allowed runs. The CLI, sent SIGTERM by the parent-death
// signal, writes an error result for the cut call into its transcript.
// The reconcile and the delivery check must read that result by one rule:
// the turn goes on after the restart, the model learns the tool was cut
// off, and the run started for it idles out like any other.
func TestFaultCrashDuringAllowedCommand(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{
		bashStep("touch started && sleep 40 && touch finished"),
		{Text: "I will check what the command did."},
	}, envOptions{quiet: true})
	a := e.startReplica("A")
	s := e.newSession()
	wa := e.dialReplica(a, e.user, s.ID)
	wa.prompt("deploy it")
	in := e.waitInput(wa, s.ID)
	wa.answer(in, map[string]any{"decision": "allow"})
	started := filepath.Join(e.workspace(s), "started")
	waitUntil(t, 60*time.Second, "the allowed command to start", func() bool {
		_, err := os.Stat(started)
		return err == nil
	})
	var pid int
	e.queryRow(`SELECT pid FROM runs WHERE session_id = $1`, []any{s.ID}, &pid)
	tree := procTree(pid)
	asked := len(e.fake.Requests())
	a.stop(syscall.SIGKILL)
	survivors(tree, 15*time.Second)
	for _, p := range tree {
		_ = syscall.Kill(p, syscall.SIGKILL) // the confinement issue's part, not this test's
	}
	if b, err := os.ReadFile(e.transcriptPath(s.ClaudeSessionID)); err == nil && os.Getenv("PARLEY_TEST_TRACE") != "" {
		t.Logf("transcript:\n%s", b)
	}

	b := e.startReplica("B", "PARLEY_IDLE_TIMEOUT=3")
	wb := e.dialReplica(b, e.user, s.ID)
	wb.waitFor(90*time.Second, "I will check what the command did.")
	told := ""
	for _, r := range e.fake.Requests()[asked:] {
		told += r.LastUserText() + "\n"
		if _, res, _, ok := r.LastToolResult(); ok {
			told += res + "\n"
		}
	}
	t.Logf("after the restart the model was told:\n%s", told)
	if strings.Contains(told, "did not run") {
		t.Errorf("the model was told the command did not run")
	}
	// The CLI, sent SIGTERM, wrote "Exit code 137" as the call's result:
	// the turn goes on, and says the call was cut off. (Had it died with
	// no result, the owed answer would say the same: may have run.)
	for _, want := range []string{"may have run", "its result is unknown"} {
		if !strings.Contains(told, want) {
			t.Errorf("the model was not told %q", want)
		}
	}
	// The run started for the session idles out (3 s) and frees its slot.
	waitUntil(t, 60*time.Second, "the resumed run to idle out", func() bool {
		var live int
		e.queryRow(`SELECT count(*) FROM runs WHERE session_id = $1 AND ended_at IS NULL`, []any{s.ID}, &live)
		return live == 0
	})
	if os.Getenv("PARLEY_TEST_TRACE") != "" {
		evs, _ := e.st.EventsAfter(t.Context(), s.ID, 0, 0)
		for _, ev := range evs {
			t.Logf("event %d %s %.300s", ev.Seq, ev.Type, ev.Payload)
		}
	}
}
