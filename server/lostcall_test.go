package server

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"parley/runner/fakeapi"
)

// TestFaultClaudeKilledDuringAllowedCommand SIGKILLs claude while a Bash
// command a member allowed is running. Parley only knows that no tool
// result was printed, not that nothing ran: the run that delivers the owed
// answer must tell the model the command may have run and its result is
// unknown, with what is known (allowed, started, no output seen; with
// PARLEY_TEST_HEARTBEAT set, the CLI's 30 s heartbeat too), and never that
// it did not run.
func TestFaultClaudeKilledDuringAllowedCommand(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{
		bashStep("touch started && sleep 40 && touch finished"),
		{Text: "Understood."},
	}, envOptions{quiet: true})
	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt("deploy it")
	in := e.waitInput(w, s.ID)
	w.answer(in, map[string]any{"decision": "allow"})
	started := filepath.Join(e.workspace(s), "started")
	waitUntil(t, 60*time.Second, "the allowed command to start", func() bool {
		_, err := os.Stat(started)
		return err == nil
	})
	waitUntil(t, 30*time.Second, "the CLI to say it started the command", func() bool {
		evs, _ := e.st.EventsBetween(t.Context(), s.ID, 0, 1<<62, "system")
		for _, ev := range evs {
			if strings.Contains(string(ev.Payload), `"task_started"`) {
				return true
			}
		}
		return false
	})
	if os.Getenv("PARLEY_TEST_HEARTBEAT") != "" {
		time.Sleep(33 * time.Second) // the CLI's first tool_progress of the command
	}
	var pid int
	e.queryRow(`SELECT pid FROM runs WHERE session_id = $1 ORDER BY id DESC LIMIT 1`, []any{s.ID}, &pid)
	asked := len(e.fake.Requests())
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill claude %d: %v", pid, err)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	if err := e.fake.WaitRequests(ctx, asked+1); err != nil {
		t.Fatalf("no model request after claude was killed: %v", err)
	}
	told := ""
	for _, r := range e.fake.Requests()[asked:] {
		told += r.LastUserText() + "\n"
	}
	t.Logf("the model was told: %s", told)
	for _, want := range []string{"you allowed it", "may have run", "its result is unknown", "the call started at"} {
		if !strings.Contains(told, want) {
			t.Errorf("the model was not told %q:\n%s", want, told)
		}
	}
	if os.Getenv("PARLEY_TEST_HEARTBEAT") != "" && !strings.Contains(told, "still running 30 seconds after it started") {
		t.Errorf("the model was not told the heartbeat Parley saw:\n%s", told)
	}
	if strings.Contains(told, "did not run") {
		t.Errorf("the model was told the command did not run:\n%s", told)
	}
}
