package server

import (
	"strings"
	"testing"
	"time"

	"parley/runner/fakeapi"
	"parley/store"
)

// The model may choose an ask_user call's timeout within the project's
// bounds: the ask's deadline follows it, and one out of bounds is refused
// with the field named.
func TestAskUserPerCallTimeout(t *testing.T) {
	q := colourQuestion(false)
	q["timeout"] = 3600
	long := colourQuestion(false)
	long["timeout"] = 7200
	e := newEnv(t, fakeapi.Scenario{
		{ToolName: askTool, ToolInput: long},
		{ToolName: askTool, ToolInput: q},
		{Text: "ok"},
	}, envOptions{quiet: true})
	if err := e.st.SetAskSettings(t.Context(), e.project.ID, store.AskSettings{ExpiryDays: 7, MaxAskTimeoutSeconds: 3600}); err != nil {
		t.Fatal(err)
	}
	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt("ask me")
	// The CLI appends the tool's schema to an error result; the reason comes first.
	if got, isErr := e.lastToolResult(2); !isErr || !strings.HasPrefix(got, "Invalid ask_user arguments: timeout: between 10 and 3600 seconds, got 7200.") {
		t.Errorf("model read %q (error %v), want the timeout refused", got, isErr)
	}
	in := e.waitInput(w, s.ID)
	if in.Deadline == nil {
		t.Fatal("the ask has no deadline")
	}
	if d := in.Deadline.Sub(in.CreatedAt); d < 3590*time.Second || d > 3610*time.Second {
		t.Errorf("deadline is %v after the ask, want the model's 3600 s", d)
	}
}
