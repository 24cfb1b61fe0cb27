package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTranscriptHasResult(t *testing.T) {
	dir := t.TempDir()
	proj := filepath.Join(dir, "projects", "-work-ws")
	if err := os.MkdirAll(proj, 0o700); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 100<<10) // lines exceed 64 KiB
	lines := []string{
		`{"type":"user","message":{"role":"user","content":"pick a colour"}}`,
		`{"type":"assistant","message":{"content":[{"type":"tool_use","id":"toolu_ok","name":"mcp__parley__ask_user","input":{}}]}}`,
		`{"type":"user","message":{"role":"user","content":[{"type":"text","text":"` + big + `"}]}}`,
		`{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_ok","type":"tool_result","content":"User selected: Blue"}]}}`,
		`{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_err","type":"tool_result","is_error":true,"content":"ask_user could not reach the user"}]}}`,
	}
	if err := os.WriteFile(filepath.Join(proj, "sess.jsonl"), []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		p    AskPayload
		want bool
	}{
		{"ask_user result", AskPayload{ToolUseID: "toolu_ok", Source: SourceAskUser}, true},
		{"ask_user error is no delivery", AskPayload{ToolUseID: "toolu_err", Source: SourceAskUser}, false},
		{"a refused permission is a delivery", AskPayload{ToolUseID: "toolu_err", Kind: KindPermission}, true},
		{"no result", AskPayload{ToolUseID: "toolu_none", Source: SourceAskUser}, false},
		{"no tool_use id", AskPayload{Source: SourceAskUser}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := transcriptHasResult(dir, "sess", tt.p); got != tt.want {
				t.Errorf("transcriptHasResult = %v, want %v", got, tt.want)
			}
		})
	}
	if transcriptHasResult(dir, "other", AskPayload{ToolUseID: "toolu_ok"}) {
		t.Error("found a result in another session's transcript")
	}
}
