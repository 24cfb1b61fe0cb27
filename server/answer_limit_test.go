package server

import (
	"strings"
	"testing"
	"time"

	"parley/runner/fakeapi"
)

// TestAnswerLimitOnEverySurface: an answer is held to the limit of a
// prompt (limit.TextBytes) on every surface, with the sentence the page
// uses, and the ask stays open for a shorter one. Before, the server took
// a 900 KiB answer (the relay client then cut it at 256 KiB, and the model
// read that ask_user could not reach the user).
func TestAnswerLimitOnEverySurface(t *testing.T) {
	const want = "This message is 900 KiB; the limit is 256 KiB."
	reason := strings.Repeat("r", 900<<10)
	for _, surface := range []string{"page", "inbox", "mcp"} {
		t.Run(surface, func(t *testing.T) {
			e := newEnv(t, fakeapi.Scenario{bashStep("touch x"), {Text: "ok"}}, envOptions{quiet: true})
			s := e.newSession()
			w := e.dial(s.ID, 0)
			w.prompt("make x")
			in := e.waitInput(w, s.ID)
			switch surface {
			case "page":
				w.answer(in, map[string]any{"decision": "deny", "reason": reason})
				w.waitFor(30*time.Second, want)
			case "inbox":
				inbox := e.dialPath("/inbox/ws?list=1")
				inbox.send(map[string]any{"action": "answer", "input_id": in.ID, "session_id": s.ID, "decision": "deny", "reason": reason})
				inbox.waitFor(30*time.Second, want)
			case "mcp":
				cs := e.mcpClient(e.apiToken(e.user), "", nil)
				callErr(t, cs, "respond", map[string]any{"sessionId": s.ID, "inputId": in.ID, "decision": "deny", "reason": reason}, want)
			}
			got, err := e.st.GetInput(t.Context(), in.ID)
			if err != nil || got.Status != "pending" {
				t.Errorf("after an answer over the limit the ask is %q (%v), want still pending", got.Status, err)
			}
		})
	}
}

// TestAnswerFromTerminalUpToTheLimit: `parley asks answer` through the
// database carries an answer up to the limit of every surface, not only
// what fits a NOTIFY payload (8000 bytes), and refuses one over it in the
// same words. Before, a 200 KiB reason failed with "the answer is too long
// (… bytes; at most about 7900)".
func TestAnswerFromTerminalUpToTheLimit(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{bashStep("touch x"), {Text: "ok"}}, envOptions{quiet: true})
	c := e.listenForTerminals(t)
	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt("make x")
	in := e.waitInput(w, s.ID)
	reason := strings.Repeat("why ", 50<<10) // 200 KiB
	if _, err := runAsks(t, c, "answer", in.ID, "--deny", "--reason", reason); err != nil {
		t.Fatalf("a 200 KiB answer from a terminal: %v", err)
	}
	got, _ := e.lastToolResult(2)
	if !strings.Contains(got, strings.TrimSpace(reason)) {
		t.Errorf("the model did not get the whole reason (%d bytes of tool result)", len(got))
	}
	var left int
	e.queryRow(`SELECT count(*) FROM pg_largeobject_metadata`, nil, &left)
	if left != 0 {
		t.Errorf("%d large objects left behind after the answer", left)
	}
}
