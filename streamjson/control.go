package streamjson

import "encoding/json"

// Result is the `result` line that ends every turn. It carries is_error,
// subtype, terminal_reason, session_id, total_cost_usd, num_turns,
// duration_ms, permission_denials and errors. API errors arrive as
// subtype "success" with is_error true: decide on is_error. An interrupt
// ends the turn with subtype "error_during_execution"; --resume of an
// unknown id ends with is_error and errors ["No conversation found …"].
type Result struct {
	Subtype      string   `json:"subtype"`
	IsError      bool     `json:"is_error"`
	Result       string   `json:"result"`
	TotalCostUSD float64  `json:"total_cost_usd"`
	NumTurns     int      `json:"num_turns"`
	DurationMS   int64    `json:"duration_ms"`
	Errors       []string `json:"errors"`
	Usage        Usage    `json:"usage"`
	// total_cost_usd and modelUsage are running totals of the process (a
	// resumed one's include what the conversation cost before);
	// model_usage_since_last_result is this turn's share, per model.
	SinceLast map[string]ModelUsage `json:"model_usage_since_last_result"`
	APIStatus *int                  `json:"api_error_status"`
}

// Usage is a result's token counts, as the Messages API names them.
type Usage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
}

// ModelUsage is one model's share of a turn, in the CLI's own camelCase.
type ModelUsage struct {
	InputTokens              int64   `json:"inputTokens"`
	OutputTokens             int64   `json:"outputTokens"`
	CacheReadInputTokens     int64   `json:"cacheReadInputTokens"`
	CacheCreationInputTokens int64   `json:"cacheCreationInputTokens"`
	CostUSD                  float64 `json:"costUSD"`
}

// ControlRequest is a request the CLI writes on stdout and waits on, with
// --permission-prompt-tool stdio:
// {"type":"control_request","request_id":"R","request":{"subtype":"can_use_tool",
// "tool_name":"Bash","input":{…},"tool_use_id":"toolu_…","permission_suggestions":[…],…}}.
// AskUserQuestion and ExitPlanMode arrive this way too.
type ControlRequest struct {
	RequestID string `json:"request_id"`
	Request   struct {
		Subtype     string          `json:"subtype"`
		ToolName    string          `json:"tool_name"`
		Input       json.RawMessage `json:"input"`
		ToolUseID   string          `json:"tool_use_id"`
		Suggestions json.RawMessage `json:"permission_suggestions"`
	} `json:"request"`
}

// ControlCancel is the CLI giving up on a control request it made:
// {"type":"control_cancel_request","request_id":"R"}.
type ControlCancel struct {
	RequestID string `json:"request_id"`
}

// StreamEvent is what Parley reads of a --include-partial-messages line
// ("type":"stream_event"): a message_start names the message that streams,
// and content_block_delta events carry its text.
type StreamEvent struct {
	Type      string // message_start, content_block_delta, …
	MessageID string // of a message_start
	DeltaType string // of a content_block_delta: text_delta, input_json_delta, …
	Text      string // of a text_delta
	// StopReason is a message_delta's: why the message ended (end_turn,
	// tool_use, …).
	StopReason string
}

// streamEventLine is the stream_event line as printed: the Messages API's
// SSE event, wrapped.
type streamEventLine struct {
	ParentToolUseID *string `json:"parent_tool_use_id"`
	Event           struct {
		Type    string `json:"type"`
		Message struct {
			ID string `json:"id"`
		} `json:"message"`
		Delta struct {
			Type       string `json:"type"`
			Text       string `json:"text"`
			StopReason string `json:"stop_reason"`
		} `json:"delta"`
	} `json:"event"`
}

// DecodeStreamEvent decodes a stream_event line. It reports false for a
// line it cannot decode and for a subagent's stream (parent_tool_use_id
// set), which Parley neither shows nor recovers.
func DecodeStreamEvent(line []byte) (StreamEvent, bool) {
	var s streamEventLine
	if json.Unmarshal(line, &s) != nil || s.ParentToolUseID != nil {
		return StreamEvent{}, false
	}
	return StreamEvent{Type: s.Event.Type, MessageID: s.Event.Message.ID,
		DeltaType: s.Event.Delta.Type, Text: s.Event.Delta.Text, StopReason: s.Event.Delta.StopReason}, true
}

// IsTextDelta reports whether e appends streamed text.
func (e StreamEvent) IsTextDelta() bool {
	return e.Type == "content_block_delta" && e.DeltaType == "text_delta"
}

// PlanInput is the input of an ExitPlanMode call. The model's tool_use
// carries its own {"plan": …}; the can_use_tool request for it (in
// --permission-mode plan) carries {"plan":"<file text>","planFilePath":…},
// or {} when the model wrote no plan file: the CLI drops the model's own
// plan argument.
type PlanInput struct {
	Plan         string `json:"plan"`
	PlanFilePath string `json:"planFilePath"`
}
