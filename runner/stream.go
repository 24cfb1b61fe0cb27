package runner

import "encoding/json"

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

// DecodeStreamEvent decodes a stream_event payload. It reports false for a
// payload it cannot decode and for a subagent's stream (parent_tool_use_id
// set), which Parley neither shows nor recovers.
func DecodeStreamEvent(payload []byte) (StreamEvent, bool) {
	var s struct {
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
	if json.Unmarshal(payload, &s) != nil || s.ParentToolUseID != nil {
		return StreamEvent{}, false
	}
	return StreamEvent{Type: s.Event.Type, MessageID: s.Event.Message.ID,
		DeltaType: s.Event.Delta.Type, Text: s.Event.Delta.Text, StopReason: s.Event.Delta.StopReason}, true
}

// IsTextDelta reports whether e appends streamed text.
func (e StreamEvent) IsTextDelta() bool {
	return e.Type == "content_block_delta" && e.DeltaType == "text_delta"
}
