package server

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"parley/runner/fakeapi"
	"parley/store"
)

// TestAskUserOverParleyHTTP: with the project's ask transport set to http,
// claude reaches ask_user at Parley's own streamable HTTP endpoint (no
// `parley mcp-askuser` process, no ASK_USER_CONFIG), and a member's answer
// in the page reaches the model. PARLEY_LONG_ASK=1 also holds the answer
// for 75 s, past the CLI's 60 s limit for a silent HTTP tool call, which
// the progress notifications keep from cutting the wait.
func TestAskUserOverParleyHTTP(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{ToolName: askTool, ToolInput: colourQuestion(false)}, {Text: "You said {{tool_result}}"}}, envOptions{})
	if err := e.st.SetProjectMCPSettings(t.Context(), e.project.ID, store.MCPSettings{
		MemberPermissionModes: []string{"default"}, AskTransport: "http"}); err != nil {
		t.Fatal(err)
	}
	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt("Ask me a colour.")
	in := e.waitInput(w, s.ID)

	ask, _ := filepath.Glob(filepath.Join(e.runtimeDir(), "askuser-*.json"))
	mcpCfg, _ := filepath.Glob(filepath.Join(e.runtimeDir(), "mcp-*.json"))
	if len(ask) != 0 || len(mcpCfg) != 1 {
		t.Errorf("runtime files: askuser %v, mcp %v; want only an HTTP mcp config", ask, mcpCfg)
	} else if b, err := os.ReadFile(mcpCfg[0]); err != nil || !strings.Contains(string(b), `"type":"http"`) || !strings.Contains(string(b), "/mcp-ask") {
		t.Errorf("mcp config %s: %v", b, err)
	} else if fi, _ := os.Stat(mcpCfg[0]); fi.Mode().Perm() != 0o600 {
		t.Errorf("mcp config mode %v, want 0600: it holds the run's token", fi.Mode().Perm())
	}
	evs, _ := e.st.EventsAfter(t.Context(), s.ID, 0, 0)
	connected := false
	var systems []string
	for _, ev := range evs {
		if ev.Type == "system" {
			systems = append(systems, string(ev.Payload))
		}
		var init struct {
			Servers []struct{ Name, Status string } `json:"mcp_servers"`
		}
		if ev.Type == "system" && json.Unmarshal(ev.Payload, &init) == nil {
			for _, m := range init.Servers {
				connected = connected || (m.Name == "parley" && m.Status == "connected")
			}
		}
	}
	if !connected {
		t.Errorf("claude's init does not list the parley MCP server as connected:\n%s", strings.Join(systems, "\n"))
	}
	if os.Getenv("PARLEY_LONG_ASK") == "1" {
		time.Sleep(75 * time.Second) // the point of this variant: a wait past the CLI's 60 s HTTP limit
	}
	w.answer(in, map[string]any{"choice": "Blue"})
	e.wantToolResult(2, "User selected: Blue", false)
}
