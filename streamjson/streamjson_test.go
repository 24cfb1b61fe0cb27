package streamjson

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestStdinLines: the lines Parley writes are the ones the CLI documents
// (claude-cli.md, "Stdin"), key for key.
func TestStdinLines(t *testing.T) {
	for _, tt := range []struct {
		name string
		got  any
		want string
	}{
		{"turn", NewUserTurn("text"), `{"type":"user","message":{"role":"user","content":"text"}}`},
		{"interrupt", NewInterrupt("R"), `{"type":"control_request","request_id":"R","request":{"subtype":"interrupt"}}`},
		{"allow", NewControlSuccess("R", map[string]any{"behavior": "allow", "updatedInput": map[string]any{"command": "ls"}}),
			`{"type":"control_response","response":{"subtype":"success","request_id":"R","response":{"behavior":"allow","updatedInput":{"command":"ls"}}}}`},
		{"deny", NewControlSuccess("R", map[string]any{"behavior": "deny", "message": "why"}),
			`{"type":"control_response","response":{"subtype":"success","request_id":"R","response":{"behavior":"deny","message":"why"}}}`},
		{"error", NewControlError("R", "not handled"),
			`{"type":"control_response","response":{"subtype":"error","request_id":"R","error":"not handled"}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.got)
			if err != nil {
				t.Fatal(err)
			}
			var got, want any
			_ = json.Unmarshal(b, &got)
			_ = json.Unmarshal([]byte(tt.want), &want)
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("%s (-want +got):\n%s", b, d)
			}
		})
	}
}

// TestMessageLineTolerant: "type" need not come first, unknown block
// types and fields are kept as they are, and a subagent's line says so.
func TestMessageLineTolerant(t *testing.T) {
	line := `{"message":{"content":[{"type":"server_tool_use","id":"s1","whatever":[1]},` +
		`{"text":"hi","type":"text"},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}],"id":"m1"},` +
		`"parent_tool_use_id":"toolu_p","type":"assistant","uuid":"u1","new_field":{"x":1}}`
	var got MessageLine[Message]
	if err := json.Unmarshal([]byte(line), &got); err != nil {
		t.Fatal(err)
	}
	parent := "toolu_p"
	want := MessageLine[Message]{ParentToolUseID: &parent, UUID: "u1", Message: Message{ID: "m1", Content: []ContentBlock{
		{Type: "server_tool_use", ID: "s1"}, {Type: "text", Text: "hi"},
		{Type: "tool_use", ID: "t1", Name: "Bash", Input: json.RawMessage(`{"command":"ls"}`)}}}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	var raw MessageLine[json.RawMessage]
	if err := json.Unmarshal([]byte(line), &raw); err != nil || raw.Message[0] != '{' {
		t.Errorf("raw message %q, %v", raw.Message, err)
	}
}

// TestResultText: a tool result's content is a string or a list of text
// blocks.
func TestResultText(t *testing.T) {
	for _, tt := range []struct{ content, want string }{
		{`"plain"`, "plain"},
		{`[{"type":"text","text":"a"},{"type":"text","text":"b"}]`, "a\nb"},
		{`42`, ""},
	} {
		if got := (ContentBlock{Type: "tool_result", Content: json.RawMessage(tt.content)}).ResultText(); got != tt.want {
			t.Errorf("ResultText(%s) = %q, want %q", tt.content, got, tt.want)
		}
	}
}

// TestDecodeStreamEvent: the main conversation's stream events decode; a
// subagent's (parent_tool_use_id set) and undecodable lines do not.
func TestDecodeStreamEvent(t *testing.T) {
	for _, tt := range []struct {
		line   string
		want   StreamEvent
		wantOK bool
	}{
		{`{"type":"stream_event","parent_tool_use_id":null,"event":{"type":"message_start","message":{"id":"m1"}}}`,
			StreamEvent{Type: "message_start", MessageID: "m1"}, true},
		{`{"event":{"delta":{"type":"text_delta","text":"hi"},"type":"content_block_delta"},"type":"stream_event"}`,
			StreamEvent{Type: "content_block_delta", DeltaType: "text_delta", Text: "hi"}, true},
		{`{"type":"stream_event","event":{"type":"message_delta","delta":{"stop_reason":"end_turn"}}}`,
			StreamEvent{Type: "message_delta", StopReason: "end_turn"}, true},
		{`{"type":"stream_event","parent_tool_use_id":"toolu_1","event":{"type":"message_start"}}`, StreamEvent{}, false},
		{`{"type":"stream_event","event":[]}`, StreamEvent{}, false},
	} {
		got, ok := DecodeStreamEvent([]byte(tt.line))
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("DecodeStreamEvent(%s) = %+v, %v; want %+v, %v", tt.line, got, ok, tt.want, tt.wantOK)
		}
	}
}
