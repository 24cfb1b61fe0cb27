package fakeapi

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// runClaude runs `claude -p --output-format stream-json --verbose prompt`
// against s in a fresh config dir and returns its result event.
func runClaude(t *testing.T, s *Server, prompt string) (result struct {
	IsError bool   `json:"is_error"`
	Result  string `json:"result"`
}) {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.CommandContext(t.Context(), ClaudeBin(t), "-p", "--output-format", "stream-json", "--verbose", prompt)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), s.Env(dir)...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("claude: %v\n%s", err, out)
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var ev struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Type == "result" {
			if err := json.Unmarshal(sc.Bytes(), &result); err != nil {
				t.Fatal(err)
			}
			return result
		}
	}
	t.Fatalf("no result event in claude output:\n%s", out)
	return result
}

func TestClaudeText(t *testing.T) {
	ClaudeBin(t)
	s := Serve(t, Scenario{{Text: "Hello from the fake model.", Chunks: 3}})
	res := runClaude(t, s, "hi")
	if res.IsError || res.Result != "Hello from the fake model." {
		t.Errorf("result = %+v, want the scripted text", res)
	}
	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("got %d main requests, want 1", len(reqs))
	}
	if got := reqs[0].LastUserText(); got != "hi" {
		t.Errorf("LastUserText = %q, want %q", got, "hi")
	}
}

func TestClaudeBashToolUse(t *testing.T) {
	ClaudeBin(t)
	s := Serve(t, Scenario{
		// "echo hi" is read-only, so -p mode runs it without asking.
		{Text: "Let me check.", ToolName: "Bash", ToolInput: map[string]string{"command": "echo hi", "description": "Say hi"}},
		{Text: "The command said: " + ToolResultPlaceholder},
	})
	res := runClaude(t, s, "run echo")
	if want := "The command said: hi"; res.IsError || res.Result != want {
		t.Errorf("result = %+v, want %q", res, want)
	}
	reqs := s.Requests()
	if len(reqs) != 2 {
		t.Fatalf("got %d main requests, want 2", len(reqs))
	}
	id, text, isErr, ok := reqs[1].LastToolResult()
	if !ok || id != reqs[0].ToolUseID || !strings.Contains(text, "hi") || isErr {
		t.Errorf("LastToolResult = %q, %q, %v, %v; want id %q and text containing hi", id, text, isErr, ok, reqs[0].ToolUseID)
	}
}
