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

// countToolResults is how many user events of the session's log carry a
// result of tool call id.
func (e *env) countToolResults(sessionID, id string) int {
	e.t.Helper()
	evs, err := e.st.EventsAfter(e.t.Context(), sessionID, 0, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	n := 0
	for _, ev := range evs {
		if ev.Type == "user" && strings.Contains(string(ev.Payload), `"tool_use_id": "`+id+`"`) {
			n++
		}
	}
	return n
}

// A session whose process ended while a tool ran (its conversation ends
// with a call that has no result) is resumed ahead and primed: the CLI
// closes the call with a result and a "No response requested." of its
// own as it takes the prime turn, and the rewind keeps them. The model
// gets what an unprimed resume sends (measured with an owed answer's
// turn: the same closing pair before the message), and the crash
// reconcile brings the CLI's closing result into the log once, nothing
// of the prime.
func TestAttackPrimeAfterAToolWasCut(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{bashStep("tail -f notes.txt"), {Text: "Second reply."}, {Text: "Third reply."}}, envOptions{quiet: true})
	s := e.newSession()
	if err := os.WriteFile(filepath.Join(e.workspace(s), "notes.txt"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w := e.dial(s.ID, 0)
	w.prompt("first")
	w.waitFor(60*time.Second, "tail -f notes.txt")
	time.Sleep(2 * time.Second) // the call runs: reading a file needs no answer
	if n := e.inputs(s.ID); n != 0 {
		t.Fatalf("the call asked %d times; it must run unasked", n)
	}
	_ = syscall.Kill(-e.livePid(s.ID), syscall.SIGKILL)
	e.waitLive(s.ID, false, 30*time.Second)
	w.conn.Close()
	w = e.dial(s.ID, 0) // resumed ahead, primed
	if !e.waitLive(s.ID, true, 30*time.Second) {
		t.Fatal("opening the page did not resume the session ahead")
	}
	w.prompt("second")
	w.waitFor(60*time.Second, "Second reply.")
	e.waitTurnOver(s.ID)
	last := e.fake.Requests()[len(e.fake.Requests())-1]
	if got, want := strings.Join(roles(last), "\n"), "user:first\nassistant:Running it.\nuser:\nassistant:No response requested.\nuser:second"; got != want {
		t.Fatalf("the primed resume sent the model:\n%s\nwant:\n%s", got, want)
	}
	var toolID string
	for _, m := range last.Messages {
		for _, b := range m.Content {
			if b.Type == "tool_result" {
				toolID = b.ToolUseID
			}
		}
	}
	if toolID == "" {
		t.Fatal("no tool result in the request")
	}
	// A crash, and the next start reconciles the transcript.
	_ = syscall.Kill(-e.livePid(s.ID), syscall.SIGKILL)
	e.waitLive(s.ID, false, 30*time.Second)
	w.conn.Close()
	w = e.dial(s.ID, 0)
	defer w.conn.Close()
	w.prompt("third")
	w.waitFor(60*time.Second, "Third reply.")
	e.waitTurnOver(s.ID)
	if n := e.countToolResults(s.ID, toolID); n > 1 {
		t.Errorf("the log holds the cut call's result %d times", n)
	}
	e.noPrimeSeen(s.ID)
}
