package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"parley/store"
)

// BenchmarkRenderLiveEvent measures the per-event work of the live path:
// one event rendered once into the frame every browser of the session gets,
// with the publisher's stream tracker (its message started at seq 41).
func BenchmarkRenderLiveEvent(b *testing.B) {
	events := map[string]string{
		"text_delta": `{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello, here is some more text "}},"parent_tool_use_id":null}`,
		"assistant":  `{"type":"assistant","message":{"id":"msg_1","content":[{"type":"text","text":"# Done\n\nI changed ` + "`main.go`" + `:\n\n` + "```go\\nfunc main() {}\\n```" + `\n\n- one\n- two"}]},"parent_tool_use_id":null}`,
		"tool_use":   `{"type":"assistant","message":{"id":"msg_2","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"go test ./..."}}]},"parent_tool_use_id":null}`,
		"ask":        `{"input_id":"6f0a8f34-1c1b-4c55-9e0e-3f4b7b1a2c3d","kind":"question","source":"ask_user","questions":[{"question":"Which colour?","type":"single","options":[{"label":"Blue","description":"Calm"},{"label":"Green"}]}]}`,
	}
	types := map[string]string{"text_delta": "stream_event", "assistant": "assistant", "tool_use": "assistant", "ask": "input_requested"}
	for name, payload := range events {
		b.Run(name, func(b *testing.B) {
			e := store.Event{SessionID: "s", Seq: 42, Type: types[name], Payload: json.RawMessage(payload)}
			tr := newStreamTracker()
			b.ReportAllocs()
			for b.Loop() {
				tr.keep("s", &renderer{st: streamState{open: "msg_1", known: true}}, 41, "stream_event")
				r := tr.renderer("s", e.Seq)
				_ = r.frame(context.Background(), []store.Event{e})
				tr.keep("s", r, e.Seq, e.Type)
			}
		})
	}
}

// BenchmarkRenderBacklog measures a reload: replaying a 1,000-event
// transcript (ten streamed turns) from the log into catch-up frames.
func BenchmarkRenderBacklog(b *testing.B) {
	var evs []store.Event
	seq := int64(0)
	add := func(typ, payload string) {
		seq++
		evs = append(evs, store.Event{SessionID: "s", Seq: seq, Type: typ, Payload: json.RawMessage(payload)})
	}
	for turn := range 10 {
		add("prompt", fmt.Sprintf(`{"text":"question %d","by":"you"}`, turn))
		msg := fmt.Sprintf("msg_%d", turn)
		add("stream_event", `{"type":"stream_event","event":{"type":"message_start","message":{"id":"`+msg+`"}},"parent_tool_use_id":null}`)
		for range 96 {
			add("stream_event", `{"type":"stream_event","event":{"type":"content_block_delta","delta":{"type":"text_delta","text":"word "}},"parent_tool_use_id":null}`)
		}
		add("assistant", `{"type":"assistant","message":{"id":"`+msg+`","content":[{"type":"text","text":"`+strings.Repeat("word ", 96)+`"}]},"parent_tool_use_id":null}`)
		add("result", `{"type":"result","is_error":false,"total_cost_usd":0.01,"num_turns":1,"duration_ms":1200}`)
	}
	b.ReportAllocs()
	for b.Loop() {
		r := newBacklogRenderer(evs)
		for i := 0; i < len(evs); i += backlogPage {
			_ = r.frame(context.Background(), evs[i:min(i+backlogPage, len(evs))])
		}
	}
}
