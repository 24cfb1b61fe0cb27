// Package streamjson declares the claude CLI's wire formats once: the lines
// it prints on stdout with `-p --output-format stream-json --verbose`, the
// lines Parley writes to its stdin with `--input-format stream-json`, and
// the entries of the conversation transcript it saves under
// $CLAUDE_CONFIG_DIR/projects/<cwd with "/"→"-">/<session_id>.jsonl.
//
// Only shapes live here, no transport: runner reads stdout and writes stdin,
// transcript and server read the log and the transcript. Each type holds the
// fields Parley reads; everything else stays in the raw line, which is what
// Parley stores. Facts quoted are as measured on @anthropic-ai/claude-code
// 2.1.328 (docs: claude-cli.md):
//
//   - "type" is not always the first key: decode whole lines; keep unknown
//     types, never fail on them.
//   - Lines exceed 64 KiB (seen: 302,801 bytes for one tool result): read
//     them with a bufio.Reader, never a default bufio.Scanner.
package streamjson

import (
	"encoding/json"
	"strings"
)

// Header is what a stdout line is routed on. The CLI prints `system`
// (subtypes init — re-sent at the start of every turn — status,
// permission_denied, api_retry, informational, task_started), `assistant`,
// `user`, `tool_progress`, `stream_event`, `result`, `control_request`,
// `control_cancel_request` and `control_response`; any other type is kept
// as it is.
type Header struct {
	Type      string `json:"type"`
	Subtype   string `json:"subtype"`
	RequestID string `json:"request_id"`
}

// MessageLine is an `assistant` line (one per completed message; content
// blocks text, thinking, tool_use) or a `user` line (tool results; its
// tool_use_result holds the raw result). A subagent's lines carry the
// tool_use id of the Task call that runs it in parent_tool_use_id; the main
// conversation's carry null.
//
// M is what the message is read as: Message for its blocks, or
// json.RawMessage to keep it as printed.
type MessageLine[M Message | json.RawMessage] struct {
	ParentToolUseID *string `json:"parent_tool_use_id"`
	UUID            string  `json:"uuid"`
	Message         M       `json:"message"`
}

// Message is the Messages API message of an assistant or user line (and of
// a transcript entry): its id, why it stopped (end_turn, tool_use, …; the
// stdout copy of a message has none) and its content blocks. A typed
// prompt's content is a plain string, which does not decode as blocks.
type Message struct {
	ID         string         `json:"id"`
	StopReason string         `json:"stop_reason"`
	Content    []ContentBlock `json:"content"`
}

// ContentBlock is one block of a message's content:
// {"type":"text","text":…}, {"type":"thinking","thinking":…},
// {"type":"tool_use","id":"toolu_…","name":…,"input":{…}} or
// {"type":"tool_result","tool_use_id":"toolu_…","is_error":true,"content":…}
// (a tool result's content is a string or a list of text blocks).
type ContentBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// ResultText returns the text of a tool_result block: its content string,
// or its blocks' texts joined by newlines.
func (b ContentBlock) ResultText() string {
	var s string
	if json.Unmarshal(b.Content, &s) == nil {
		return s
	}
	var blocks []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(b.Content, &blocks)
	parts := make([]string, 0, len(blocks))
	for _, bl := range blocks {
		parts = append(parts, bl.Text)
	}
	return strings.Join(parts, "\n")
}

// System is a `system` line: init names the model and the MCP servers'
// status ("mcp_servers":[{"name":"parley","status":"failed",…}] when a
// server's command cannot start, "connected" when it did); api_retry says
// which attempt of how many failed and why; task_started names the
// tool_use id of a Bash command it starts.
type System struct {
	Subtype      string      `json:"subtype"`
	Model        string      `json:"model"`
	MCPServers   []MCPServer `json:"mcp_servers"`
	Attempt      int         `json:"attempt"`
	MaxRetries   int         `json:"max_retries"`
	RetryDelayMS int64       `json:"retry_delay_ms"`
	ErrorStatus  *int        `json:"error_status"`
	Error        string      `json:"error"`
	ToolUseID    string      `json:"tool_use_id"`
}

// MCPServer is one MCP server's status in a system/init line.
type MCPServer struct {
	Name   string `json:"name"`
	Status string `json:"status"`
}

// ToolProgress is a `tool_progress` line, a heartbeat every 30 s while a
// tool blocks; the call's real id is in parent_tool_use_id.
type ToolProgress struct {
	ParentToolUseID string `json:"parent_tool_use_id"`
	Elapsed         int    `json:"elapsed_time_seconds"`
}
