package runner

import (
	"context"
	"encoding/json"

	"parley/streamjson"
)

// checkMCP reads the MCP servers' status from a system/init event, once
// per run. Measured on claude 2.1.328, init lists
// "mcp_servers":[{"name":"parley","status":"failed","source":"dynamic"}]
// when the server's command cannot start ("connected" when it did). The run
// goes on: Claude can still ask with its own AskUserQuestion, which reaches
// the page as a can_use_tool request; the session says so.
func (r *Run) checkMCP(ctx context.Context, raw json.RawMessage) {
	if r.mcpChecked || (r.spec.AskConfigPath == "" && r.spec.MCPConfigPath == "") {
		return
	}
	r.mcpChecked = true
	var init streamjson.System
	if err := json.Unmarshal(raw, &init); err != nil {
		return
	}
	for _, s := range init.MCPServers {
		if s.Name != "parley" || s.Status == "connected" {
			continue
		}
		r.log.Warn("the parley ask server did not start", "status", s.Status)
		r.notice(ctx, "warn", "Parley's ask_user tool could not start in this run (its MCP server is "+s.Status+
			"). Claude carries on and can still ask you with its own question card (AskUserQuestion).")
	}
}
