package runner

import (
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"parley/askuser"
	"parley/streamjson"
)

func TestTranscriptHasResult(t *testing.T) {
	dir := t.TempDir()
	const sid = "5f0c2a9e-3b1d-4c7a-9e2f-1a2b3c4d5e6f"
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
	if err := os.WriteFile(filepath.Join(proj, sid+".jsonl"), []byte(strings.Join(lines, "\n")), 0o600); err != nil {
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
			if got := transcriptHasResult(dir, sid, tt.p); got != tt.want {
				t.Errorf("transcriptHasResult = %v, want %v", got, tt.want)
			}
		})
	}
	if err := syscall.Mkfifo(filepath.Join(proj, "9d3c1e2a-0000-4000-8000-000000000000.jsonl"), 0o600); err != nil {
		t.Fatal(err)
	}
	if transcriptHasResult(dir, "9d3c1e2a-0000-4000-8000-000000000000", AskPayload{ToolUseID: "toolu_ok"}) {
		t.Error("read a FIFO as a transcript")
	}
	if transcriptHasResult(dir, "0b7d6c1e-0000-4000-8000-000000000000", AskPayload{ToolUseID: "toolu_ok"}) {
		t.Error("found a result in another session's transcript")
	}
}

// TestDeliveryFollowsTheAnswerRule: an owed answer counts as delivered by
// the CLI's transcript, and a handed-over answer by the stdout result,
// exactly when AnswerTaken says the call's result took it (the rule the
// reconcile of a lost run follows too: TestTurnsFollowTheAnswerRule).
// Before, the delivery check counted every error of a permission as
// delivered, the CLI's own "Tool permission request failed" too.
func TestDeliveryFollowsTheAnswerRule(t *testing.T) {
	const sid = "5f0c2a9e-3b1d-4c7a-9e2f-1a2b3c4d5e6f"
	for _, tt := range []struct {
		name    string
		source  string
		content string
		isError bool
		taken   bool
	}{
		{"allowed command's result", "", "deployed", false, true},
		{"allowed command failed", "", "Exit code 1\nno such host", true, true},
		{"allowed command cut off with its process", "", "Exit code 137", true, true},
		{"permission request the CLI abandoned", "", "Tool permission request failed: AbortError: The operation was aborted", true, false},
		{"ask_user answer", SourceAskUser, "User selected: Blue", false, true},
		{"ask_user relay broke", SourceAskUser, "ask_user could not reach the user", true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			result := streamjson.ContentBlock{Type: "tool_result", ToolUseID: "toolu_1", IsError: tt.isError}
			result.Content, _ = json.Marshal(tt.content)
			if got := AnswerTaken(tt.source, result); got != tt.taken {
				t.Fatalf("AnswerTaken = %v, want %v", got, tt.taken)
			}
			line, _ := json.Marshal(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": []any{result}}})
			dir := t.TempDir()
			proj := filepath.Join(dir, "projects", "-work-ws")
			if err := os.MkdirAll(proj, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(proj, sid+".jsonl"), line, 0o600); err != nil {
				t.Fatal(err)
			}
			p := AskPayload{InputID: "in_1", Kind: KindPermission, ToolUseID: "toolu_1", Source: tt.source}
			if tt.source == SourceAskUser {
				p.Kind = KindQuestion
			}
			if got := transcriptHasResult(dir, sid, p); got != tt.taken {
				t.Errorf("transcriptHasResult = %v, want %v", got, tt.taken)
			}

			// The live check: the run stops awaiting the answer when taken.
			r := &Run{log: slog.New(slog.DiscardHandler), journal: &memJournal{}, pub: make(chanPublisher, 16), stopping: true}
			r.awaiting = map[string]handedOver{"toolu_1": {p: p, status: askuser.StatusAnswered}}
			r.confirmDeliveries(t.Context(), line)
			if _, still := r.awaiting["toolu_1"]; still == tt.taken {
				t.Errorf("after the result, the answer is still awaited: %v, want %v", still, !tt.taken)
			}
		})
	}
}
