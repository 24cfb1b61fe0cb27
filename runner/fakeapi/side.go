package fakeapi

import (
	"encoding/json"
	"strings"
)

// isSide reports whether a request is a side query rather than a turn of the
// main conversation. Side requests consume no scripted step.
//
// Measured on claude 2.1.328: every main-model request carries the session's
// tools (12–13 of them, even in -p mode). Side queries such as the session
// title ("You are naming a coding session…") send "tools": [] and ask for
// structured output with output_config.format {type: json_schema}. The resume
// cache warm-up sends max_tokens 1. Forked side queries of the interactive UI
// (away_summary, prompt_suggestion, agent_summary) reuse the main tools and
// system prompt and cannot be told apart by shape; none were seen in -p runs.
func isSide(r Request) bool {
	return len(r.Tools) == 0 || r.schema != nil || (r.maxTokens > 0 && r.maxTokens <= 1)
}

// sideText is the reply to a side request: JSON matching its output schema
// when it asked for one (the title query's {"title": …}), else SideText.
func sideText(r Request) string {
	if r.schema == nil {
		return SideText
	}
	b, _ := json.Marshal(fromSchema(r.schema, "value"))
	return string(b)
}

// fromSchema builds a small value that satisfies a JSON schema: every
// property of an object, "Fake <name>" for strings, zero for the rest.
func fromSchema(raw json.RawMessage, name string) any {
	var s struct {
		Type       any                        `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Enum       []any                      `json:"enum"`
	}
	if json.Unmarshal(raw, &s) != nil {
		return nil
	}
	if len(s.Enum) > 0 {
		return s.Enum[0]
	}
	typ, _ := s.Type.(string)
	if list, ok := s.Type.([]any); ok && len(list) > 0 {
		typ, _ = list[0].(string)
	}
	switch typ {
	case "object":
		obj := map[string]any{}
		for k, v := range s.Properties {
			obj[k] = fromSchema(v, k)
		}
		return obj
	case "array":
		return []any{}
	case "boolean":
		return false
	case "number", "integer":
		return 0
	case "null":
		return nil
	default:
		return "Fake " + strings.ReplaceAll(name, "_", " ")
	}
}
