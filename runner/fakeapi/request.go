package fakeapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Request is one recorded POST /v1/messages request, parsed.
type Request struct {
	// Raw is the request body as sent.
	Raw []byte
	// Header is the request's HTTP header (x-api-key and the like).
	Header http.Header
	// Model is the requested model id.
	Model string
	// System is the system prompt, text blocks joined with newlines.
	System string
	// Messages is the conversation, every content normalized to blocks.
	Messages []Message
	// Tools lists the names in the request's tools array.
	Tools []string
	// SessionID is the CLI session id from metadata.user_id, if present.
	SessionID string
	// Step is the index of the scripted step served, or -1 when the script was exhausted.
	Step int
	// ToolUseID is the id of the tool_use block sent in the reply, if any.
	ToolUseID string

	maxTokens int             // max_tokens
	schema    json.RawMessage // output_config.format.schema, for json_schema output
}

// Message is one entry of a request's messages array.
type Message struct {
	Role    string  `json:"role"`
	Content []Block `json:"content"`
}

// Block is one content block: text, tool_use or tool_result (other types keep only Type).
type Block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
	// Content is a tool_result's content: a string or an array of blocks.
	Content json.RawMessage `json:"content,omitempty"`
}

// UnmarshalJSON accepts the API's two content forms: a plain string or an array of blocks.
func (m *Message) UnmarshalJSON(b []byte) error {
	var raw struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	m.Role = raw.Role
	blocks, err := parseBlocks(raw.Content)
	m.Content = blocks
	return err
}

// parseBlocks decodes a content value that is either a string or an array of blocks.
func parseBlocks(raw json.RawMessage) ([]Block, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []Block{{Type: "text", Text: s}}, nil
	}
	var blocks []Block
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, fmt.Errorf("content: %w", err)
	}
	return blocks, nil
}

// parseRequest decodes a Messages API request body.
func parseRequest(body []byte) (Request, error) {
	var wire struct {
		Model    string                  `json:"model"`
		System   json.RawMessage         `json:"system"`
		Messages []Message               `json:"messages"`
		Tools    []struct{ Name string } `json:"tools"`
		Metadata struct {
			UserID string `json:"user_id"`
		} `json:"metadata"`
		MaxTokens    int `json:"max_tokens"`
		OutputConfig struct {
			Format struct {
				Type   string          `json:"type"`
				Schema json.RawMessage `json:"schema"`
			} `json:"format"`
		} `json:"output_config"`
	}
	if err := json.Unmarshal(body, &wire); err != nil {
		return Request{}, fmt.Errorf("decode request: %w", err)
	}
	sys, err := parseBlocks(wire.System)
	if err != nil {
		return Request{}, fmt.Errorf("decode system: %w", err)
	}
	r := Request{Raw: body, Model: wire.Model, System: blocksText(sys), Messages: wire.Messages,
		Step: -1, maxTokens: wire.MaxTokens}
	if f := wire.OutputConfig.Format; f.Type == "json_schema" && len(f.Schema) > 0 {
		r.schema = f.Schema
	}
	for _, t := range wire.Tools {
		r.Tools = append(r.Tools, t.Name)
	}
	// The CLI sends metadata.user_id as a JSON string: {"device_id":…,"session_id":…}.
	var uid struct {
		SessionID string `json:"session_id"`
	}
	if json.Unmarshal([]byte(wire.Metadata.UserID), &uid) == nil {
		r.SessionID = uid.SessionID
	}
	return r, nil
}

// blocksText joins the text of the text blocks.
func blocksText(bs []Block) string {
	var parts []string
	for _, b := range bs {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// lastUser returns the last message with role "user". The CLI may append a
// role "system" message after it, so the last message is not always the user's.
func (r Request) lastUser() (Message, bool) {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i], true
		}
	}
	return Message{}, false
}

// LastToolResult returns the last tool_result block of the last user message,
// its content flattened to text.
func (r Request) LastToolResult() (toolUseID, text string, isError, ok bool) {
	m, found := r.lastUser()
	if !found {
		return "", "", false, false
	}
	for i := len(m.Content) - 1; i >= 0; i-- {
		b := m.Content[i]
		if b.Type != "tool_result" {
			continue
		}
		inner, _ := parseBlocks(b.Content)
		return b.ToolUseID, blocksText(inner), b.IsError, true
	}
	return "", "", false, false
}

// LastUserText returns the text the user typed in the last user message,
// leaving out the <system-reminder> blocks the CLI adds.
func (r Request) LastUserText() string {
	m, _ := r.lastUser()
	var parts []string
	for _, b := range m.Content {
		if b.Type == "text" && !strings.HasPrefix(b.Text, "<system-reminder>") {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}
