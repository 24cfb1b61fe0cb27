package runner

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"path"

	"github.com/google/uuid"

	"parley/safefile"
	"parley/streamjson"
)

// maxTranscriptLine bounds one transcript line read for a tool result (a
// result may be hundreds of KB); a longer line is skipped.
const maxTranscriptLine = 16 << 20

// transcriptHasResult reports whether the CLI's saved conversation
// ($CLAUDE_CONFIG_DIR/projects/<cwd>/<session id>.jsonl, shared/claude-cli.md)
// holds a result of the ask's tool call that took its answer
// (AnswerTaken, the rule the reconcile of a lost run follows too): then
// the model has the answer and a resumed process must not be sent it
// again.
func transcriptHasResult(configDir, claudeSessionID string, p AskPayload) bool {
	if configDir == "" || p.ToolUseID == "" || uuid.Validate(claudeSessionID) != nil {
		return false
	}
	f, err := safefile.OpenGlob(configDir, path.Join("projects", "*", claudeSessionID+".jsonl"))
	if err != nil {
		return false
	}
	defer f.Close()
	return hasResult(f, []byte(p.ToolUseID), p.Source)
}

// hasResult scans a transcript for a tool_result block of tool_use id
// that took the answer of an ask of source.
func hasResult(r io.Reader, id []byte, source string) bool {
	lr := safefile.NewLineReader(r, maxTranscriptLine)
	for {
		line, err := lr.Next()
		if bytes.Contains(line, id) && lineHasResult(line, string(id), source) {
			return true
		}
		if err != nil && !errors.Is(err, safefile.ErrLineTooLong) {
			return false
		}
	}
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
