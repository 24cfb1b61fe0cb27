package runner

import (
	"bytes"
	"encoding/json"
	"io"

	"github.com/google/uuid"

	"parley/safefile"
	"parley/streamjson"
)

// transcriptHasResult reports whether the CLI's saved conversation
// ($CLAUDE_CONFIG_DIR/projects/<cwd>/<session id>.jsonl, shared/claude-cli.md,
// streamjson.TranscriptGlob)
// holds a result of the ask's tool call that took its answer
// (AnswerTaken, the rule the reconcile of a lost run follows too): then
// the model has the answer and a resumed process must not be sent it
// again.
func transcriptHasResult(configDir, claudeSessionID string, p AskPayload) bool {
	if configDir == "" || p.ToolUseID == "" || uuid.Validate(claudeSessionID) != nil {
		return false
	}
	f, err := safefile.OpenGlob(configDir, streamjson.TranscriptGlob(claudeSessionID))
	if err != nil {
		return false
	}
	defer f.Close()
	return hasResult(f, []byte(p.ToolUseID), p.Source)
}

// hasResult scans a transcript (streamjson.EachLine: bounded lines, a
// line too long skipped) for a tool_result block of tool_use id that took
// the answer of an ask of source.
func hasResult(r io.Reader, id []byte, source string) bool {
	found := false
	_ = streamjson.EachLine(r, func(_ int, line []byte) bool {
		found = bytes.Contains(line, id) && lineHasResult(line, string(id), source)
		return !found
	}, nil)
	return found
}

func lineHasResult(line []byte, id, source string) bool {
	var u streamjson.MessageLine[streamjson.Message]
	if json.Unmarshal(line, &u) != nil {
		return false
	}
	for _, b := range u.Message.Content {
		if b.Type == "tool_result" && b.ToolUseID == id && AnswerTaken(source, b) {
			return true
		}
	}
	return false
}
