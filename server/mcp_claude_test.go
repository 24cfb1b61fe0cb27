package server

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"parley/runner/fakeapi"
)

var (
	sessionIDField = regexp.MustCompile(`\\?"sessionId\\?":\s*\\?"([0-9a-f-]{36})`)
	inputIDField   = regexp.MustCompile(`\\?"inputId\\?":\s*\\?"([0-9a-f-]{36})`)
)

func field(re *regexp.Regexp, text string) string {
	if m := re.FindStringSubmatch(text); m != nil {
		return m[1]
	}
	return ""
}

// TestMCPClaudeAsClient: the real claude CLI is the MCP client. Its
// (scripted) model calls create_session on Parley's /mcp with a token,
// get_status once the session waits for a permission, and respond to allow
// it; the Parley session then finishes its work.
func TestMCPClaudeAsClient(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{bashStep("touch made-by-claude-client"), {Text: "Inner work done."}}, envOptions{})
	innerID := make(chan string, 1)
	asked := make(chan struct{})
	outer := fakeapi.New(fakeapi.Scenario{
		{ToolName: "mcp__parley__create_session", ToolInput: map[string]any{"project": "Test project", "prompt": "Make a file."}},
		{Hold: asked, ToolName: "mcp__parley__get_status", ToolInputFrom: func(res string) any {
			id := field(sessionIDField, res)
			innerID <- id
			return map[string]any{"sessionId": id}
		}},
		{ToolName: "mcp__parley__respond", ToolInputFrom: func(res string) any {
			return map[string]any{"sessionId": field(sessionIDField, res), "inputId": field(inputIDField, res), "decision": "allow"}
		}},
		{Text: "Driving done: {{tool_result}}"},
	})
	if err := outer.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(outer.Close)

	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"parley": map[string]any{
		"type": "http", "url": e.web.URL + "/mcp", "headers": map[string]string{"Authorization": "Bearer " + e.apiToken(e.user)}}}})
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), fakeapi.ClaudeBin(t), "-p", "Use Parley to make a file.", "--mcp-config", cfgPath,
		"--allowedTools", "mcp__parley__create_session,mcp__parley__get_status,mcp__parley__respond",
		"--output-format", "stream-json", "--verbose")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), outer.Env(filepath.Join(dir, "claude"))...)
	done := make(chan []byte, 1)
	go func() { out, _ := cmd.CombinedOutput(); done <- out }()

	var id string
	select {
	case id = <-innerID:
	case out := <-done:
		t.Fatalf("claude ended before calling get_status:\n%s", out)
	case <-time.After(90 * time.Second):
		t.Fatal("claude never called create_session")
	}
	if id == "" {
		t.Fatalf("create_session's result reached the model without a sessionId: %+v", outer.Requests()[1].Messages)
	}
	w := e.dial(id, 0)
	in := e.waitInput(w, id)
	close(asked)

	var out []byte
	select {
	case out = <-done:
	case <-time.After(120 * time.Second):
		t.Fatal("claude did not finish")
	}
	if !strings.Contains(string(out), "Driving done: ") || !strings.Contains(string(out), "Answered") {
		t.Errorf("claude's output lacks the respond result:\n%s", out)
	}
	w.waitFor(60*time.Second, "Inner work done.")
	got, err := e.st.GetInput(t.Context(), in.ID)
	if err != nil || got.Status != "answered" || got.AnsweredBy != e.user.Name {
		t.Errorf("the ask = %+v, %v; want answered by the token's user", got, err)
	}
	sess, _ := e.st.GetSession(t.Context(), id)
	if _, err := os.Stat(filepath.Join(e.workspace(sess), "made-by-claude-client")); err != nil {
		t.Errorf("the allowed command did not run: %v", err)
	}
}
