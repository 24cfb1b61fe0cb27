package server

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"parley/store"
	"parley/views"
)

// renderEvent renders one event as the live publisher does.
func renderEvent(t *testing.T, typ, payload string) string {
	t.Helper()
	r := &renderer{}
	f := r.frame(context.Background(), []store.Event{{Seq: 7, Type: typ, Payload: json.RawMessage(payload)}})
	return string(f.Data)
}

func TestLineDiff(t *testing.T) {
	tests := []struct {
		name, old, new string
		want           string
	}{
		{"change one line", "a\nb\nc\n", "a\nB\nc\n", " a|-b|+B| c"},
		{"insert", "a\nc", "a\nb\nc", " a|+b| c"},
		{"delete all", "x\ny", "", "-x|-y"},
		{"new file", "", "one\ntwo", "+one|+two"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, l := range lineDiff(tt.old, tt.new) {
				got = append(got, string(l.Op)+l.Text)
			}
			if diff := cmp.Diff(tt.want, strings.Join(got, "|")); diff != "" {
				t.Errorf("lineDiff (-want +got):\n%s", diff)
			}
		})
	}
}

func TestToolCards(t *testing.T) {
	tests := []struct {
		name, tool, input string
		want              []string
	}{
		{"bash shows the command", "Bash", `{"command":"go test ./...","description":"run tests"}`,
			[]string{`class="tool-name">Bash`, `$ go test ./...`}},
		{"edit is a diff", "Edit", `{"file_path":"/w/main.go","old_string":"fmt.Println(1)","new_string":"fmt.Println(2)"}`,
			[]string{"/w/main.go", `class="d-del">- fmt.Println(1)`, `class="d-add">+ fmt.Println(2)`, " open"}},
		{"write is all additions", "Write", `{"file_path":"/w/a.txt","content":"hello\nworld\n"}`,
			[]string{`class="d-add">+ hello`, `class="d-add">+ world`}},
		{"task lists its subagent", "Task", `{"description":"look around","subagent_type":"Explore","prompt":"…"}`,
			[]string{"look around (Explore)", `id="tool-t1-sub"`}},
		{"unknown tool", "mcp__x__y", `{"title":"a thing"}`, []string{"a thing"}},
		{"markup in input is text", "Bash", `{"command":"echo <script>alert(1)</script>"}`, []string{"&lt;script&gt;"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := renderEvent(t, "assistant", `{"message":{"id":"m","content":[{"type":"tool_use","id":"t1","name":"`+tt.tool+`","input":`+tt.input+`}]}}`)
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("card lacks %q:\n%s", w, got)
				}
			}
			if strings.Contains(got, "<script>") {
				t.Errorf("card holds a live script tag:\n%s", got)
			}
		})
	}
}

func TestToolResultFolding(t *testing.T) {
	short := renderEvent(t, "user", `{"message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}}`)
	if !strings.Contains(short, `<details class="result-body" open>`) {
		t.Errorf("a short result is not shown open:\n%s", short)
	}
	long := renderEvent(t, "user", `{"message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"`+strings.Repeat(`line\n`, 50)+`"}]}}`)
	if strings.Contains(long, " open>") || !strings.Contains(long, "50 lines") {
		t.Errorf("a long result is not folded with its size:\n%s", long)
	}
	sub := renderEvent(t, "user", `{"parent_tool_use_id":"task1","message":{"content":[{"type":"tool_result","tool_use_id":"t9","content":"x"}]}}`)
	if strings.Contains(sub, "tool-t9") {
		t.Errorf("a subagent's result is shown:\n%s", sub)
	}
	step := renderEvent(t, "assistant", `{"parent_tool_use_id":"task1","message":{"id":"m2","content":[{"type":"tool_use","id":"t9","name":"Read","input":{"file_path":"/w/x.go"}}]}}`)
	if !strings.Contains(step, `beforeend:#tool-task1-sub`) || !strings.Contains(step, "↳ Read /w/x.go") {
		t.Errorf("a subagent's tool call is not listed in its Task card:\n%s", step)
	}
}

func TestAssistantTextIsSanitizedMarkdown(t *testing.T) {
	got := renderEvent(t, "assistant", `{"message":{"id":"m1","content":[{"type":"text","text":"**hi** <img src=x onerror=alert(1)> [x](javascript:alert(1)) <script>alert(2)</script>"}]}}`)
	for _, bad := range []string{"onerror", "javascript:", "<script"} {
		if strings.Contains(got, bad) {
			t.Errorf("assistant text holds %q:\n%s", bad, got)
		}
	}
	if !strings.Contains(got, "<strong>hi</strong>") {
		t.Errorf("assistant text is not rendered as markdown:\n%s", got)
	}
}

func TestTurnView(t *testing.T) {
	tests := []struct {
		name, payload string
		want          views.Turn
	}{
		{"success with this turn's usage",
			`{"type":"result","subtype":"success","is_error":false,"num_turns":2,"duration_ms":805,"total_cost_usd":0.9,
			  "model_usage_since_last_result":{"claude-x":{"inputTokens":20,"cacheReadInputTokens":5,"outputTokens":10,"costUSD":0.25}}}`,
			views.Turn{Seq: 7, OK: true, Title: "Done", CostUSD: 0.25, InputTokens: 25, OutputTokens: 10, Turns: 2, DurationMS: 805, Model: "claude-x"}},
		{"api error offers a retry",
			`{"type":"result","subtype":"success","is_error":true,"api_error_status":413,"result":"Request too large","num_turns":1,"duration_ms":100,"total_cost_usd":0,"usage":{"input_tokens":3,"output_tokens":0}}`,
			views.Turn{Seq: 7, Title: "The API returned an error (HTTP 413)", Detail: "Request too large", InputTokens: 3, Turns: 1, DurationMS: 100, Retry: true}},
		{"stopped",
			`{"type":"result","subtype":"error_during_execution","is_error":true,"num_turns":1,"duration_ms":10,"errors":["[ede_diagnostic] result_type=user"]}`,
			views.Turn{Seq: 7, Title: "Stopped", Detail: "The turn was stopped.", Turns: 1, DurationMS: 10}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := turnView(store.Event{Seq: 7, Type: "result", Payload: json.RawMessage(tt.payload)})
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("turnView (-want +got):\n%s", diff)
			}
		})
	}
	html := renderEvent(t, "result", tests[1].payload)
	if !strings.Contains(html, `name="action" value="retry"`) || !strings.Contains(html, "Retry the last message") {
		t.Errorf("an error result has no retry button:\n%s", html)
	}
}

func TestSystemEvents(t *testing.T) {
	if got := renderEvent(t, "system", `{"type":"system","subtype":"init","model":"claude-opus-5-5"}`); !strings.Contains(got, `id="session-model"`) || !strings.Contains(got, "claude-opus-5-5") {
		t.Errorf("init does not show the model:\n%s", got)
	}
	got := renderEvent(t, "system", `{"type":"system","subtype":"api_retry","attempt":2,"max_retries":10,"error_status":529,"error":"overloaded"}`)
	if !strings.Contains(got, "The API returned an error (HTTP 529): overloaded. Claude Code retries by itself (attempt 2 of 10).") {
		t.Errorf("api_retry notice:\n%s", got)
	}
}

func TestSnippetParts(t *testing.T) {
	got := snippetParts("the " + store.SnippetStart + "index" + store.SnippetStop + " is " + store.SnippetStart + "missing" + store.SnippetStop)
	want := []views.SnippetPart{{Text: "the "}, {Text: "index", Hit: true}, {Text: " is "}, {Text: "missing", Hit: true}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("snippetParts (-want +got):\n%s", diff)
	}
}

func TestExportMarkdown(t *testing.T) {
	sess := store.Session{ID: "0b7c4c5e-0000-0000-0000-000000000000", Title: "Fix it", Status: "idle", CreatedBy: "alice", CreatedAt: time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)}
	evs := []store.Event{
		{Seq: 1, Type: "prompt", Payload: json.RawMessage(`{"text":"please fix","by":"alice"}`)},
		{Seq: 2, Type: "assistant", Payload: json.RawMessage(`{"message":{"id":"m","content":[{"type":"text","text":"Sure, **done**."}]}}`)},
		{Seq: 3, Type: "assistant", Payload: json.RawMessage(`{"message":{"id":"m","content":[{"type":"tool_use","id":"t","name":"Bash","input":{"command":"ls"}}]}}`)},
		{Seq: 4, Type: "user", Payload: json.RawMessage("{\"message\":{\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t\",\"content\":\"a```b\"}]}}")},
		{Seq: 5, Type: "result", Payload: json.RawMessage(`{"is_error":false,"num_turns":1,"duration_ms":1500,"total_cost_usd":0.01}`)},
		{Seq: 6, Type: "prompt", Payload: json.RawMessage(`{"text":"(Sent by Parley.) Go on.","by":"alice","parley":true}`)},
	}
	got := exportMarkdown(sess, evs)
	for _, want := range []string{"# Fix it\n", "## alice · ", "## Parley, for alice · ", "> please fix", "**Claude:**\n\nSure, **done**.", "**Tool Bash** `$ ls`", "````text\na```b\n````", "_Done · $0.0100"} {
		if !strings.Contains(got, want) {
			t.Errorf("export lacks %q:\n%s", want, got)
		}
	}
	var buf bytes.Buffer
	_ = json.NewEncoder(&buf).Encode(exportJSON(sess, evs))
	var back struct {
		Session struct{ Title string }
		Events  []struct {
			Seq     int64
			Payload map[string]any
		}
	}
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil || back.Session.Title != "Fix it" || len(back.Events) != 6 || back.Events[0].Payload["text"] != "please fix" {
		t.Errorf("JSON export = %s (%v)", buf.String(), err)
	}
}

// TestBacklogShowsTextWhereItsStreamBegan covers the CLI running a tool of a
// message (an ask) before printing the completed message: a replay must
// show the text where the live page streamed it, before the ask.
func TestBacklogShowsTextWhereItsStreamBegan(t *testing.T) {
	evs := []store.Event{
		{Seq: 1, Type: "stream_event", Payload: json.RawMessage(`{"event":{"type":"message_start","message":{"id":"m2"}}}`)},
		{Seq: 2, Type: "stream_event", Payload: json.RawMessage(`{"event":{"type":"content_block_delta","delta":{"type":"text_delta","text":"Which one"}}}`)},
		{Seq: 3, Type: "notice", Payload: json.RawMessage(`{"level":"info","text":"THE ASK"}`)},
		{Seq: 4, Type: "assistant", Payload: json.RawMessage(`{"message":{"id":"m2","content":[{"type":"text","text":"Which one **now**?"}]}}`)},
	}
	got := string(newBacklogRenderer(evs).frame(context.Background(), evs).Data)
	text, ask := strings.Index(got, "<strong>now</strong>"), strings.Index(got, "THE ASK")
	if text < 0 || ask < 0 || text > ask || strings.Count(got, "Which one") != 1 || strings.Contains(got, "beforeend:#m-") {
		t.Errorf("backlog frame shows the text at %d and the ask at %d, or streams it:\n%s", text, ask, got)
	}
}
