package fakeapi

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// sseEvent is one decoded event of a streamed reply.
type sseEvent struct {
	Type string
	Data map[string]any
}

// post sends body to path on s and returns the status and the SSE events
// (or, for a non-stream reply, the raw body as one event with Type "body").
func post(t *testing.T, s *Server, path, body string) (int, []sseEvent) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), "POST", s.URL()+path, strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, []sseEvent{{Type: "body", Data: map[string]any{"raw": string(b)}}}
	}
	var events []sseEvent
	sc := bufio.NewScanner(resp.Body)
	var typ string
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "event: "); ok {
			typ = v
		} else if v, ok := strings.CutPrefix(line, "data: "); ok {
			ev := sseEvent{Type: typ}
			if err := json.Unmarshal([]byte(v), &ev.Data); err != nil {
				t.Fatalf("event %s: %v", typ, err)
			}
			if ev.Data["type"] != typ {
				t.Errorf("event %s carries type %v", typ, ev.Data["type"])
			}
			events = append(events, ev)
		}
	}
	return resp.StatusCode, events
}

// mainBody is a main-model request whose last user message holds content.
func mainBody(content string) string {
	return `{"model":"m","max_tokens":1000,"tools":[{"name":"Bash"}],"stream":true,` +
		`"messages":[{"role":"user","content":` + content + `},{"role":"system","content":"env"}]}`
}

// toolResult is user content answering tool id with text.
func toolResult(id, text string) string {
	return `[{"type":"tool_result","tool_use_id":"` + id + `","content":[{"type":"text","text":"` + text + `"}]}]`
}

// summary renders events compactly: type plus the interesting delta or block.
func summary(events []sseEvent) []string {
	var out []string
	for _, e := range events {
		s := e.Type
		if d, ok := e.Data["delta"].(map[string]any); ok {
			for _, k := range []string{"text", "partial_json", "stop_reason"} {
				if v, ok := d[k]; ok {
					s += " " + v.(string)
				}
			}
		}
		if b, ok := e.Data["content_block"].(map[string]any); ok {
			s += " " + b["type"].(string)
			if n, ok := b["name"]; ok {
				s += " " + n.(string)
			}
		}
		out = append(out, s)
	}
	return out
}

func TestStream(t *testing.T) {
	tests := []struct {
		name string
		step Step
		want []string
	}{
		{"text", Step{Text: "abcd", Chunks: 2}, []string{"message_start", "content_block_start text",
			"content_block_delta ab", "content_block_delta cd", "content_block_stop",
			"message_delta end_turn", "message_stop"}},
		{"text and tool", Step{Text: "x", ToolName: "Bash", ToolInput: map[string]string{"command": "ls"}},
			[]string{"message_start", "content_block_start text", "content_block_delta x", "content_block_stop",
				"content_block_start tool_use Bash", `content_block_delta {"command":"ls"}`, "content_block_stop",
				"message_delta tool_use", "message_stop"}},
		{"tool only", Step{ToolName: "Read"}, []string{"message_start", "content_block_start tool_use Read",
			"content_block_delta {}", "content_block_stop", "message_delta tool_use", "message_stop"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Serve(t, Scenario{tt.step})
			_, events := post(t, s, "/v1/messages?beta=true", mainBody(`"hi"`))
			if diff := cmp.Diff(tt.want, summary(events)); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if tt.step.ToolName != "" {
				block := events[len(events)-5].Data["content_block"].(map[string]any)
				if id := s.Requests()[0].ToolUseID; block["id"] != id || !strings.HasPrefix(id, "toolu_") {
					t.Errorf("tool_use id %v, recorded %q", block["id"], id)
				}
			}
		})
	}
}

func TestSideRequestsConsumeNoStep(t *testing.T) {
	s := Serve(t, Scenario{{Text: "first"}})
	_, got := post(t, s, "/v1/messages/count_tokens", `{"messages":[]}`)
	if raw := got[0].Data["raw"]; raw != `{"input_tokens":10}` {
		t.Errorf("count_tokens = %v", raw)
	}
	title := `{"model":"m","tools":[],"messages":[{"role":"user","content":"name it"}],` +
		`"output_config":{"format":{"type":"json_schema","schema":{"type":"object","properties":{"title":{"type":"string"}}}}}}`
	_, got = post(t, s, "/v1/messages", title)
	if d := summary(got)[2]; d != `content_block_delta {"title":"Fake title"}` {
		t.Errorf("title reply = %q", d)
	}
	_, got = post(t, s, "/v1/messages", `{"model":"m","messages":[{"role":"user","content":"x"}]}`)
	if d := summary(got)[2]; d != "content_block_delta "+SideText {
		t.Errorf("side reply = %q", d)
	}
	_, got = post(t, s, "/v1/messages", mainBody(`"hi"`))
	if d := summary(got)[2]; d != "content_block_delta first" {
		t.Errorf("main reply = %q, want the first step", d)
	}
	if n, m := len(s.SideRequests()), len(s.Requests()); n != 2 || m != 1 {
		t.Errorf("side, main = %d, %d; want 2, 1", n, m)
	}
}

func TestSequentialStatusAndExhaustion(t *testing.T) {
	s := Serve(t, Scenario{{Status: 529}, {Text: "ok"}})
	status, got := post(t, s, "/v1/messages", mainBody(`"hi"`))
	if raw, _ := got[0].Data["raw"].(string); status != 529 || !strings.Contains(raw, `"overloaded_error"`) {
		t.Errorf("error reply = %d %v", status, got)
	}
	for _, want := range []string{"ok", ExhaustedText} {
		_, got = post(t, s, "/v1/messages", mainBody(`"retry"`))
		if d := summary(got)[2]; d != "content_block_delta "+want {
			t.Errorf("reply = %q, want %q", d, want)
		}
	}
}

func TestPerTurn(t *testing.T) {
	s := New(Demo())
	s.PerTurn = true
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	for range 2 { // two conversations, each starting at step 0
		post(t, s, "/v1/messages", mainBody(`"try the demo"`))
		reqs := s.Requests()
		last := reqs[len(reqs)-1]
		if last.Step != 0 || last.ToolUseID == "" {
			t.Fatalf("prompt got step %d, tool id %q; want step 0 with a tool_use", last.Step, last.ToolUseID)
		}
		_, got := post(t, s, "/v1/messages", mainBody(toolResult(last.ToolUseID, "User selected: Green")))
		var text string
		for _, e := range summary(got) {
			text += strings.TrimPrefix(e, "content_block_delta ")
		}
		if !strings.Contains(text, "> User selected: Green") {
			t.Errorf("final text %q does not quote the tool result", text)
		}
	}
	_, got := post(t, s, "/v1/messages", mainBody(toolResult("toolu_other", "x")))
	if d := summary(got)[2]; d != "content_block_delta "+ExhaustedText {
		t.Errorf("unknown tool id reply = %q", d)
	}
}

func TestHoldAndWaitRequests(t *testing.T) {
	hold := make(chan struct{})
	s := Serve(t, Scenario{{Text: "before", Hold: hold}})
	done := make(chan string, 1)
	go func() { // no t.Fatal off the test goroutine: report the body or the error
		resp, err := http.Post(s.URL()+"/v1/messages", "application/json", strings.NewReader(mainBody(`"hi"`)))
		if err != nil {
			done <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		done <- string(b)
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := s.WaitRequests(ctx, 1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
		t.Fatal("reply finished while held")
	case <-time.After(100 * time.Millisecond):
	}
	close(hold)
	if got := <-done; !strings.HasSuffix(got, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n") {
		t.Errorf("held reply = %q, want it to end with message_stop", got)
	}
	short, cancel2 := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer cancel2()
	if err := s.WaitRequests(short, 2); err == nil {
		t.Error("WaitRequests(2) returned nil with one request")
	}
}

func TestListenAndServeStops(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { errc <- ListenAndServe(ctx, "127.0.0.1:0", Demo(), nil) }()
	cancel()
	if err := <-errc; err != nil {
		t.Errorf("ListenAndServe = %v, want nil after cancel", err)
	}
}
