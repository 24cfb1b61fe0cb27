package server

import (
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"parley/runner/fakeapi"
)

// TestProjectOptionsReachClaude: a project's model, appended system prompt
// and instructions (CLAUDE.md) reach the real CLI's request to the model.
func TestProjectOptionsReachClaude(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "Configured.", Chunks: 2}}, envOptions{quiet: true})
	owner := e.member("owner@example.com", "Olga Owner", roleOwner)
	form := url.Values{"model": {"claude-parley-test-model"}, "permission_mode": {"acceptEdits"},
		"append_system_prompt": {"PARLEY-APPENDED-MARKER"}, "instructions": {"PARLEY-CLAUDE-MD-MARKER"},
		"ask_user_enabled": {"1"}, "max_turns": {"5"}, "allowed_tools": {"Read"}}
	path := "/projects/" + strconv.FormatInt(e.project.ID, 10) + "/settings"
	if resp := e.postAs(owner, path, form); resp.StatusCode != 303 {
		t.Fatalf("save settings: %d %s", resp.StatusCode, readBody(resp.Body))
	}
	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt("hello")
	w.waitFor(60*time.Second, "Configured.", "Done ·")
	reqs := e.fake.Requests()
	if len(reqs) == 0 {
		t.Fatal("no request reached the model")
	}
	r := reqs[0]
	if r.Model != "claude-parley-test-model" {
		t.Errorf("model = %q, want the project's", r.Model)
	}
	if !strings.Contains(r.System, "PARLEY-APPENDED-MARKER") {
		t.Errorf("the system prompt lacks the appended text:\n%.2000s", r.System)
	}
	if !strings.Contains(string(r.Raw), "PARLEY-CLAUDE-MD-MARKER") {
		t.Error("the request lacks the project's CLAUDE.md instructions")
	}
}

// TestMembersSeeEachOther: one member prompts, another answers the ask from
// their own socket; both see it live, attributed by name.
func TestMembersSeeEachOther(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{
		{Text: "Let me ask.", ToolName: askTool, ToolInput: colourQuestion(false)},
		{Text: "You chose: " + fakeapi.ToolResultPlaceholder},
	}, envOptions{quiet: true})
	bea := e.member("bea@example.com", "Bea Member", roleMember)
	vic := e.member("vic@example.com", "Vic Viewer", roleViewer)
	s := e.newSession()
	a, b, v := e.dial(s.ID, 0), e.dialAs(bea, s.ID, 0), e.dialAs(vic, s.ID, 0)
	a.prompt("pick a colour")
	in := e.waitInput(a, s.ID)
	b.waitFor(30*time.Second, "pick a colour", "you", `value="`+in.ID+`"`)
	v.send(map[string]any{"action": "answer", "input_id": in.ID, "choice": "Green"})
	v.waitFor(10*time.Second, "Viewers can watch this project but not answer")
	b.send(map[string]any{"action": "answer", "input_id": in.ID, "choice": "Blue"})
	for _, tab := range []*ws{a, b, v} {
		tab.waitFor(60*time.Second, "Bea Member answered: Blue", "You chose: User selected: Blue")
	}
	got, err := e.st.GetInput(t.Context(), in.ID)
	if err != nil || got.AnsweredBy != "Bea Member" {
		t.Errorf("answered_by = %q, %v", got.AnsweredBy, err)
	}
	evs, _ := e.st.EventsAfter(t.Context(), s.ID, 0, 0)
	for _, ev := range evs {
		var p struct{ By string }
		json.Unmarshal(ev.Payload, &p)
		if ev.Type == "prompt" && p.By != "you" {
			t.Errorf("prompt event %s lacks its author", ev.Payload)
		}
	}
}
