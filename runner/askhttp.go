package runner

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
	suffix := make([]byte, 8)
	_, _ = rand.Read(suffix)
	path := filepath.Join(dir, "mcp-"+hex.EncodeToString(suffix)+".json")
	// O_EXCL: never write the token through a file someone else made first.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("mcp config: %w", err)
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return "", fmt.Errorf("mcp config %s: %w", path, err)
	}
	return path, nil
}

// AskHTTPURL is the ask_user endpoint next to the relay's /ask.
func AskHTTPURL(relayURL string) string {
	return strings.TrimSuffix(relayURL, "/ask") + "/mcp-ask"
}
