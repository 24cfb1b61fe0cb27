package server

import (
	"errors"
	"syscall"
	"testing"
	"time"

	"parley/runner"
	"parley/runner/fakeapi"
)

// TestFaultAnswerSavedThenReplicaKilled: replica A saves an answer while
// its claude is frozen, then A is SIGKILLed and its claude dies with it.
// Nobody writes to the session again, yet replica B, taking A's sessions
// over, resumes it and the model reads the answer exactly once, as a new
// turn.
func TestFaultAnswerSavedThenReplicaKilled(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{
		{Text: "Let me ask.", ToolName: askTool, ToolInput: colourQuestion(false)},
		{Text: "Thanks, carrying on."},
	}, envOptions{quiet: true})
	a, b := e.startReplica("A"), e.startReplica("B")
	s := e.newSession()
	wa := e.dialReplica(a, e.user, s.ID)
	wa.prompt("pick a colour")
	in := e.waitInput(wa, s.ID)
	e.waitTranscript(s, e.fake.Requests()[0].ToolUseID)
	var pid int
	e.queryRow(`SELECT pid FROM runs WHERE session_id = $1`, []any{s.ID}, &pid)
	t.Cleanup(func() { _ = syscall.Kill(-pid, syscall.SIGKILL) })
	if err := syscall.Kill(-pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	wa.answer(in, map[string]any{"choice": "Orange"})
	wa.waitFor(60*time.Second, "You answered: Orange")
	a.stop(syscall.SIGKILL)
	// What issue 12's item 4 makes of a dead Parley: its claude dies too.
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		t.Fatal(err)
	}
	wb := e.dialReplica(b, e.user, s.ID)
	wb.waitFor(90*time.Second, newTurnText, "Thanks, carrying on.")
	if got := e.owner(s.ID); got != b.id {
		t.Errorf("owner %q, want B (%s)", got, b.id)
	}
	e.wantDelivered(s.ID, in.ID, runner.DeliveredNewTurn)
	reqs := e.fake.Requests()
	if got := userMentions(reqs[len(reqs)-1], "Orange"); got != 1 {
		t.Errorf("the model was told the answer %d times, want once", got)
	}
	e.wantContiguousLog(s.ID)
}
