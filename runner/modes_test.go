package runner

import (
	"encoding/json"
	"strings"
	"testing"

	"parley/askuser"
	"parley/runner/fakeapi"
)

var modeQuestion = map[string]any{"questions": []any{map[string]any{"question": "Which colour?", "header": "Colour",
	"multiSelect": false, "options": []any{map[string]any{"label": "Blue", "description": "calm"},
		map[string]any{"label": "Red", "description": "loud"}}}}}

// No permission mode answers a question or a plan for the user, even with
// AskUserQuestion and ExitPlanMode in --allowedTools: each reaches Parley as
// a can_use_tool request and opens a card, and the model reads only what a
// person decided. (Measured on claude 2.1.328 in default, acceptEdits, plan
// and bypassPermissions; as root, bypassPermissions needs IS_SANDBOX=1, and
// the settings page refuses it without — see server.modeRefusal.)
func TestNoModeAnswersForTheUser(t *testing.T) {
	claude := fakeapi.ClaudeBin(t)
	tests := []struct {
		mode, tool string
		input      any
		kind       string
	}{
		{"acceptEdits", "AskUserQuestion", modeQuestion, KindQuestion},
		{"bypassPermissions", "AskUserQuestion", modeQuestion, KindQuestion},
		{"plan", "AskUserQuestion", modeQuestion, KindQuestion},
		{"plan", "ExitPlanMode", map[string]any{"plan": "1. Do it"}, KindPlan},
	}
	for _, tt := range tests {
		t.Run(tt.mode+"/"+tt.tool, func(t *testing.T) {
			fake := fakeapi.Serve(t, fakeapi.Scenario{{Text: "Asking.", ToolName: tt.tool, ToolInput: tt.input},
				{Text: "Read: " + fakeapi.ToolResultPlaceholder}})
			sup, _, pub := newTestSupervisor(t, claude, append(fake.Env(t.TempDir()), "IS_SANDBOX=1"))
			o := testOptions(t, "")
			o.ExtraArgs = []string{"--permission-mode", tt.mode, "--allowedTools", "AskUserQuestion,ExitPlanMode"}
			if err := sup.Prompt(t.Context(), "s1", With(o), "go", Author{Name: "you"}); err != nil {
				t.Fatal(err)
			}
			e := waitType(t, pub, TypeInputRequested)
			var p AskPayload
			if err := json.Unmarshal(e.Payload, &p); err != nil {
				t.Fatal(err)
			}
			if p.Kind != tt.kind || p.ToolName != tt.tool {
				t.Errorf("card kind %q for %q, want %q for %q", p.Kind, p.ToolName, tt.kind, tt.tool)
			}
			if n := len(fake.Requests()); n != 1 {
				t.Fatalf("the model was answered before anyone decided: %d requests", n)
			}
			err := sup.Answer(t.Context(), "s1", With(o), p.InputID, Response{By: "ann", Decline: true, Reason: "not now"})
			if err != nil {
				t.Fatal(err)
			}
			waitType(t, pub, "result")
			_, text, _, _ := fake.Requests()[1].LastToolResult()
			if !strings.Contains(text, "not now") {
				t.Errorf("the model read %q, want the person's decline", text)
			}
		})
	}
}

// When the parley MCP server cannot start (here its command is /bin/false),
// the session says so and Claude's own AskUserQuestion still opens a card.
func TestBrokenAskServerWarnsAndClaudeStillAsks(t *testing.T) {
	fake := fakeapi.Serve(t, fakeapi.Scenario{{Text: "Asking.", ToolName: "AskUserQuestion", ToolInput: modeQuestion},
		{Text: "Read: " + fakeapi.ToolResultPlaceholder}})
	sup, j, pub := newTestSupervisor(t, fakeapi.ClaudeBin(t), fake.Env(t.TempDir()))
	o := testOptions(t, "http://127.0.0.1:9/ask") // a relay: the parley server is configured
	if err := sup.Prompt(t.Context(), "s1", With(o), "go", Author{Name: "you"}); err != nil {
		t.Fatal(err)
	}
	n := waitType(t, pub, TypeNotice)
	if !strings.Contains(string(n.Payload), "ask_user tool could not start") || !strings.Contains(string(n.Payload), "failed") {
		t.Errorf("notice = %s, want the ask server's failure", n.Payload)
	}
	e := waitType(t, pub, TypeInputRequested)
	var p AskPayload
	_ = json.Unmarshal(e.Payload, &p)
	if p.Source != SourceClaude {
		t.Errorf("question source = %q, want Claude's own AskUserQuestion", p.Source)
	}
	if err := sup.Answer(t.Context(), "s1", With(o), p.InputID, Response{By: "ann", Replies: []askuser.Reply{{Selected: []string{"Blue"}}}}); err != nil {
		t.Fatal(err)
	}
	waitType(t, pub, "result")
	_, text, _, _ := fake.Requests()[1].LastToolResult()
	if !strings.Contains(text, `"Which colour?"="Blue"`) {
		t.Errorf("the model read %q, want the answer", text)
	}
	if c := strings.Count(strings.Join(j.types(), " "), TypeNotice); c != 1 {
		t.Errorf("%d notices, want one per run", c)
	}
}
