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
