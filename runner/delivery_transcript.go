package runner

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"path"

	"github.com/google/uuid"

	"parley/safefile"
)

// maxTranscriptLine bounds one transcript line read for a tool result (a
// result may be hundreds of KB); a longer line is skipped.
const maxTranscriptLine = 16 << 20

// transcriptHasResult reports whether the CLI's saved conversation
// ($CLAUDE_CONFIG_DIR/projects/<cwd>/<session id>.jsonl, shared/claude-cli.md)
// holds the result of the ask's tool call: then the model has the answer
// and a resumed process must not be sent it again. A result that is an
// error of ask_user (the relay broke) did not carry the answer.
func transcriptHasResult(configDir, claudeSessionID string, p AskPayload) bool {
	if configDir == "" || p.ToolUseID == "" || uuid.Validate(claudeSessionID) != nil {
		return false
	}
	f, err := safefile.OpenGlob(configDir, path.Join("projects", "*", claudeSessionID+".jsonl"))
	if err != nil {
		return false
	}
	defer f.Close()
	return hasResult(f, []byte(p.ToolUseID), p.Source == SourceAskUser)
}

// hasResult scans a transcript for a tool_result block of tool_use id;
// errorsDontCount skips results marked is_error.
func hasResult(r io.Reader, id []byte, errorsDontCount bool) bool {
	lr := safefile.NewLineReader(r, maxTranscriptLine)
	for {
		line, err := lr.Next()
		if bytes.Contains(line, id) && lineHasResult(line, string(id), errorsDontCount) {
			return true
		}
		if err != nil && !errors.Is(err, safefile.ErrLineTooLong) {
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
