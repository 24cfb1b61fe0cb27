package streamjson

import "encoding/json"

// Entry is one line of the CLI's transcript
// ($CLAUDE_CONFIG_DIR/projects/<cwd with "/"→"-">/<session_id>.jsonl),
// as far as Parley reads it. Its user and assistant entries hold the same
// message as the matching stdout line, with the line's uuid; a subagent's
// entries are marked isSidechain, the CLI's own bookkeeping lines (command
// output, caveats) isMeta, and a tool result's raw value is in
// toolUseResult. The file is written by the run's own uid: read it as
// hostile input, a bounded line at a time.
type Entry struct {
	Type          string          `json:"type"`
	UUID          string          `json:"uuid"`
	IsSidechain   bool            `json:"isSidechain"`
	IsMeta        bool            `json:"isMeta"`
	Message       json.RawMessage `json:"message"`
	ToolUseResult json.RawMessage `json:"toolUseResult"`
}
