package runner

import (
	"encoding/json"
	"fmt"
	"strings"

	"parley/askuser"
)

// askHTTPConfig writes the --mcp-config file of a run whose ask_user is
// served over streamable HTTP at Parley's own endpoint (askURL) instead of
// a `parley mcp-askuser` child. The file holds the run's token in a header,
// so it is written 0600 and passed by path, never on the command line
// where other users of the machine could read it.
func askHTTPConfig(dir, askURL, token string) (string, error) {
	data, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"parley": map[string]any{
			"type": "http", "url": askURL,
			"headers": map[string]string{"Authorization": "Bearer " + token},
		},
	}})
	if err != nil {
		return "", fmt.Errorf("mcp config: %w", err)
	}
	path, err := askuser.WriteSecretFile(dir, "mcp-", data)
	if err != nil {
		return "", fmt.Errorf("mcp config: %w", err)
	}
	return path, nil
}

// AskHTTPURL is the ask_user endpoint next to the relay's /ask.
func AskHTTPURL(relayURL string) string {
	return strings.TrimSuffix(relayURL, "/ask") + "/mcp-ask"
}
