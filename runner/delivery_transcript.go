package runner

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
)

// transcriptHasResult reports whether the CLI's saved conversation
// ($CLAUDE_CONFIG_DIR/projects/<cwd>/<session id>.jsonl, shared/claude-cli.md)
// holds the result of the ask's tool call: then the model has the answer
// and a resumed process must not be sent it again. A result that is an
// error of ask_user (the relay broke) did not carry the answer.
func transcriptHasResult(configDir, claudeSessionID string, p AskPayload) bool {
	if configDir == "" || claudeSessionID == "" || p.ToolUseID == "" {
		return false
	}
	files, _ := filepath.Glob(filepath.Join(configDir, "projects", "*", claudeSessionID+".jsonl"))
	id := []byte(p.ToolUseID)
	for _, name := range files {
		if fileHasResult(name, id, p.Source == SourceAskUser) {
			return true
		}
	}
	return false
}

// fileHasResult scans one transcript for a tool_result block of tool_use
// id; errorsDontCount skips results marked is_error.
func fileHasResult(name string, id []byte, errorsDontCount bool) bool {
	f, err := os.Open(name)
	if err != nil {
		return false
	}
	defer f.Close()
	rd := bufio.NewReader(f)
	for {
		// Lines exceed 64 KiB (shared/claude-cli.md): read whole lines.
		line, err := rd.ReadBytes('\n')
		if bytes.Contains(line, id) && lineHasResult(line, string(id), errorsDontCount) {
			return true
		}
		if err != nil {
			return false
		}
	}
}

func lineHasResult(line []byte, id string, errorsDontCount bool) bool {
	var u toolResults
	if json.Unmarshal(line, &u) != nil {
		return false
	}
	for _, b := range u.Message.Content {
		if b.Type == "tool_result" && b.ToolUseID == id && !(errorsDontCount && b.IsError) {
			return true
		}
	}
	return false
}
