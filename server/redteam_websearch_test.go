package server

import (
	"strings"
	"testing"
	"time"

	"parley/runner/fakeapi"
)

// TestGatewayPassesTheCLIsWebSearch: the gateway refuses the server tools
// that reach a host a request names (web_fetch, mcp_servers) but not
// web_search, because the pinned CLI's WebSearch tool is that server tool.
// Through the real CLI and the gateway, a WebSearch call's request reaches
// the model API with web_search_20250305, and no request of the CLI
// carries a web_fetch server tool (its WebFetch fetches on its side).
func TestGatewayPassesTheCLIsWebSearch(t *testing.T) {
	sc := fakeapi.Scenario{
		{ToolName: "WebSearch", ToolInput: map[string]any{"query": "parley confinement"}},
		{Text: "OUT " + fakeapi.ToolResultPlaceholder},
	}
	e := newEnv(t, sc, envOptions{quiet: true, isolation: "uid", guard: true, runConfig: confineRuns(t)})
	settings := e.project.ProjectSettings
	settings.AllowedTools = []string{"WebSearch"}
	if err := e.st.UpdateProjectSettings(t.Context(), e.project.ID, settings, ""); err != nil {
		t.Fatal(err)
	}
	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt("search the web")
	deadline := time.Now().Add(120 * time.Second)
	var search string
	for search == "" && time.Now().Before(deadline) {
		for _, r := range append(e.fake.Requests(), e.fake.SideRequests()...) {
			raw := string(r.Raw)
			if strings.Contains(raw, "web_fetch_") {
				t.Errorf("the CLI sent a web_fetch server tool: %.300s", raw)
			}
			if i := strings.Index(raw, `"web_search_`); i >= 0 {
				search = raw[max(i-40, 0):min(i+120, len(raw))]
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	if search == "" {
		t.Fatal("no request with the web_search server tool reached the model API")
	}
	t.Logf("the CLI's WebSearch request reached the API through the gateway: …%s…", search)
}
