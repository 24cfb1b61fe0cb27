package fakeapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// sse writes Server-Sent Events in the Messages API's streaming format,
// flushing after every event so the client sees each one at once.
type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

// event writes "event: <type>\ndata: <json>\n\n". The data object carries the
// same "type" as the event line, as the real API's does.
func (s sse) event(typ string, data map[string]any) {
	data["type"] = typ
	b, _ := json.Marshal(data)
	fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", typ, b)
	if s.f != nil {
		s.f.Flush()
	}
}

// reply is what one response streams: optional text, then an optional tool_use.
type reply struct {
	model      string
	text       string
	chunks     int
	chunkDelay time.Duration
	sent       func(chunk int, at time.Time)
	hold       <-chan struct{}
	toolID     string
	toolName   string
	toolInput  any
	// inputTokens is the usage reported in message_start (10 if 0).
	inputTokens int
}

// stream writes a whole streamed message. It returns early, without
// message_stop, if ctx ends while pacing chunks or while held.
func (r reply) stream(ctx context.Context, w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("request-id", "req_fake_"+randomHex(8))
	w.WriteHeader(http.StatusOK)
	out := sse{w: w}
	out.f, _ = w.(http.Flusher)

	out.event("message_start", map[string]any{"message": map[string]any{
		"id": "msg_fake_" + randomHex(8), "type": "message", "role": "assistant",
		"model": r.model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": max(r.inputTokens, 10), "output_tokens": 1},
	}})
	index := 0
	if r.text != "" {
		if !r.streamText(ctx, out, index) {
			return
		}
		index++
	}
	if r.hold != nil {
		select {
		case <-r.hold:
		case <-ctx.Done():
			return
		}
	}
	stop := "end_turn"
	if r.toolName != "" {
		r.streamToolUse(out, index)
		stop = "tool_use"
	}
	out.event("message_delta", map[string]any{
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": 5},
	})
	out.event("message_stop", map[string]any{})
}

// streamText sends the text block in r.chunks text_delta events, pausing
// r.chunkDelay between them. It reports false if ctx ended first.
func (r reply) streamText(ctx context.Context, out sse, index int) bool {
	out.event("content_block_start", map[string]any{"index": index,
		"content_block": map[string]any{"type": "text", "text": ""}})
	for i, part := range split(r.text, r.chunks) {
		if i > 0 && r.chunkDelay > 0 {
			t := time.NewTimer(r.chunkDelay)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return false
			}
		}
		out.event("content_block_delta", map[string]any{"index": index,
			"delta": map[string]any{"type": "text_delta", "text": part}})
		if r.sent != nil {
			r.sent(i, time.Now())
		}
	}
	out.event("content_block_stop", map[string]any{"index": index})
	return true
}

// streamToolUse sends a tool_use block whose input arrives as one input_json_delta.
func (r reply) streamToolUse(out sse, index int) {
	input, err := json.Marshal(r.toolInput)
	if err != nil || r.toolInput == nil {
		input = []byte("{}")
	}
	out.event("content_block_start", map[string]any{"index": index, "content_block": map[string]any{
		"type": "tool_use", "id": r.toolID, "name": r.toolName, "input": map[string]any{}}})
	out.event("content_block_delta", map[string]any{"index": index,
		"delta": map[string]any{"type": "input_json_delta", "partial_json": string(input)}})
	out.event("content_block_stop", map[string]any{"index": index})
}

// split cuts s into n pieces of about equal rune count (at least one piece).
func split(s string, n int) []string {
	runes := []rune(s)
	if n < 1 {
		n = 1
	}
	if n > len(runes) {
		n = max(len(runes), 1)
	}
	parts := make([]string, 0, n)
	for i := range n {
		parts = append(parts, string(runes[i*len(runes)/n:(i+1)*len(runes)/n]))
	}
	return parts
}

// writeError writes an Anthropic error body: {"type":"error","error":{"type":…,"message":…}}.
func writeError(w http.ResponseWriter, status int) {
	types := map[int]string{400: "invalid_request_error", 401: "authentication_error",
		403: "permission_error", 404: "not_found_error", 413: "request_too_large",
		429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"}
	typ, ok := types[status]
	if !ok {
		typ = "api_error"
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("request-id", "req_fake_"+randomHex(8))
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]any{
		"type": typ, "message": fmt.Sprintf("fake model: scripted %d %s", status, typ)}})
	w.Write(b)
}

// randomHex returns 2n random hex digits.
func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
