package runner

import (
	"encoding/json"
	"strings"
	"testing"

	"parley/askuser"
)

func TestEditedInput(t *testing.T) {
	p := AskPayload{Kind: KindPermission, ToolName: "Write", Input: json.RawMessage(`{"file_path":"/a","content":"x"}`)}
	cmd := "ls"
	tests := []struct {
		name    string
		resp    Response
		wantErr string
	}{
		{"object", Response{Input: json.RawMessage(`{"file_path":"/b","content":"y"}`)}, ""},
		{"not JSON", Response{Input: json.RawMessage(`{"file_path":`)}, "not a JSON object"},
		{"an array", Response{Input: json.RawMessage(`[1]`)}, "not a JSON object"},
		{"two values", Response{Input: json.RawMessage(`{} {}`)}, "not a JSON object"},
		{"always", Response{AllowAlways: true, Input: json.RawMessage(`{}`)}, "once, not always"},
		{"with a command", Response{Command: &cmd, Input: json.RawMessage(`{}`)}, "not both"},
	}
	for _, tt := range tests {
		err := checkEditedInput(tt.resp)
		if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("%s: checkEditedInput = %v, want %q", tt.name, err, tt.wantErr)
		}
	}
	body := controlReply(p, askuser.StatusAnswered, tests[0].resp)
	got, _ := json.Marshal(body["updatedInput"])
	if string(got) != `{"content":"y","file_path":"/b"}` {
		t.Errorf("updatedInput = %s, want the edited input", got)
	}
	if !sameJSON(json.RawMessage(`{"content":"x", "file_path":"/a"}`), p.Input) {
		t.Error("sameJSON: the same object in another order differs")
	}
}
