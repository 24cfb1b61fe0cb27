package gateway

import (
	"encoding/json"
	"strconv"
	"strings"
)

// The Messages API's server tools run on Anthropic's side: web_search
// queries a search engine, web_fetch fetches a URL the model (so the
// request) names, and mcp_servers has the API call an MCP server at any
// URL. The last two carry what a request holds to a host it chooses, so
// they are egress for a run that has no network (bubblewrap): they are
// refused unless the operator turns server tools on (Config.ServerTools,
// PARLEY_MODEL_SERVER_TOOLS). web_search stays allowed: the CLI's own
// WebSearch tool is that server tool (its request carries
// web_search_20250305), and a query reaches only the search engine; its
// searches are priced (webSearchUSD) and reserved before forwarding.
// The CLI's WebFetch fetches on the client side and needs no server tool.

// defaultSearchUses is the max_uses set on a web_search tool that names
// none, so that what one request may cost in searches is bounded and
// reserved before it is forwarded.
const defaultSearchUses = 20

// serverTools reads and rules on the server tools of a request body's
// top-level keys obj. It returns the searches to reserve, or the sentence
// of a refusal; it may set max_uses on web_search tools in obj.
func serverTools(obj map[string]json.RawMessage, allowEgress bool) (searches int64, refused string) {
	if m, ok := obj["mcp_servers"]; ok && !allowEgress && string(m) != "null" && string(m) != "[]" {
		return 0, "Parley's gateway does not forward mcp_servers: the API would reach a server of the request's choosing. The operator can allow it with PARLEY_MODEL_SERVER_TOOLS=on."
	}
	raw, ok := obj["tools"]
	if !ok {
		return 0, ""
	}
	var tools []map[string]json.RawMessage
	if json.Unmarshal(raw, &tools) != nil {
		return 0, "" // not a list of objects: the API refuses it itself
	}
	changed := false
	for _, tool := range tools {
		var typ string
		_ = json.Unmarshal(tool["type"], &typ)
		switch {
		case strings.HasPrefix(typ, "web_fetch") && !allowEgress:
			return 0, "Parley's gateway does not forward the web_fetch server tool: the API would fetch a URL of the request's choosing. The operator can allow it with PARLEY_MODEL_SERVER_TOOLS=on."
		case strings.HasPrefix(typ, "web_search"):
			var uses float64
			if json.Unmarshal(tool["max_uses"], &uses) != nil || uses <= 0 {
				uses = defaultSearchUses
				tool["max_uses"] = json.RawMessage(strconv.Itoa(defaultSearchUses))
				changed = true
			}
			searches += int64(uses)
		}
	}
	if changed {
		if enc, err := json.Marshal(tools); err == nil {
			obj["tools"] = enc
		}
	}
	return searches, ""
}
