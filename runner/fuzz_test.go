package runner

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"parley/askuser"
)

// FuzzDecoder feeds arbitrary bytes to the stdout decoder, as a broken or
// hostile CLI could print them. Whatever comes in, Next never fails with
// anything but io.EOF, never loses a non-blank line, and every line it
// returns is storable: a JSON object, or a malformed-line record that is one.
func FuzzDecoder(f *testing.F) {
	f.Add([]byte(`{"type":"system","subtype":"init","session_id":"s"}` + "\n" + `{"type":"result","subtype":"success"}` + "\n"))
	f.Add([]byte("not json\n\n{\"type\":\"assistant\"}\r\n"))
	f.Add([]byte("null\n[1,2]\n\"x\"\n42\n{}\n"))
	f.Add([]byte("{\"type\":\"x\"}{\"type\":\"y\"}\n"))
	f.Add([]byte("\xff\xfe{\"type\":\"a\u0000\"}\n   \n"))
	f.Add([]byte(`{"type":"stream_event","event":{"type":"content_block_delta","delta":{"text":"\ud800"}}}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		want := 0
		for _, l := range bytes.Split(in, []byte("\n")) {
			if len(bytes.TrimSpace(l)) > 0 {
				want++
			}
		}
		d := NewDecoder(bytes.NewReader(in))
		got := 0
		for {
			l, err := d.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("Next: %v", err)
			}
			got++
			if got > want {
				t.Fatalf("more lines than the input holds (%d)", want)
			}
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(l.Raw, &obj); err != nil || obj == nil {
				t.Fatalf("line %d is not a JSON object (%v): %q", got, err, l.Raw)
			}
			if l.Err != nil {
				if l.Type != "" {
					t.Fatalf("malformed line %d has a type %q", got, l.Type)
				}
				if !utf8.Valid(l.Raw) {
					t.Fatalf("malformed record %d is not valid UTF-8", got)
				}
			}
		}
		if got != want {
			t.Fatalf("decoded %d lines, the input holds %d", got, want)
		}
	})
}

// FuzzCheckResponse runs the answer validator on any ask and any response a
// page or an MCP client could send. It must never panic, and what it lets
// through must be what the ask can take.
func FuzzCheckResponse(f *testing.F) {
	f.Add(KindPermission, "Bash", `{"command":"ls"}`, `{"command":"ls -la"}`)
	f.Add(KindPermission, "Edit", `{}`, `{"input":{"file_path":"a"}}`)
	f.Add(KindPermission, "Edit", `{}`, `{"input":[1],"allow_always":true}`)
	f.Add(KindPlan, "ExitPlanMode", `{}`, `{"mode":"acceptEdits"}`)
	f.Add(KindQuestion, "", `{"questions":[{"id":"db","question":"Which?","options":[{"label":"A"},{"label":"B"}]}]}`, `{"replies":[{"selected":["A"]}]}`)
	f.Add(KindQuestion, "", `{"questions":[{"id":"t","question":"Why?","type":"text"}]}`, `{"replies":[{"text":""}]}`)
	f.Fuzz(func(t *testing.T, kind, tool, form, resp string) {
		p := AskPayload{Kind: kind, ToolName: tool}
		if kind == KindQuestion {
			var fm askuser.Form
			if json.Unmarshal([]byte(form), &fm) != nil || fm.Validate() != nil {
				return
			}
			p.Form = &fm
		}
		var r Response
		if json.Unmarshal([]byte(resp), &r) != nil {
			return
		}
		err := checkResponse(p, r)
		if err != nil {
			var ae *AnswerError
			if !errors.As(err, &ae) || strings.TrimSpace(ae.Msg) == "" {
				t.Fatalf("error is not a sentence for the member: %#v", err)
			}
			return
		}
		if r.Decline {
			return
		}
		switch kind {
		case KindPermission:
			if r.Command != nil && (tool != "Bash" || *r.Command == "" || r.AllowAlways) {
				t.Fatalf("edited command let through: %+v", r)
			}
			if r.Input != nil {
				var m map[string]any
				if json.Unmarshal(r.Input, &m) != nil || m == nil || r.AllowAlways {
					t.Fatalf("edited input let through: %s", r.Input)
				}
			}
		case KindQuestion:
			if len(r.Replies) > len(p.Form.Questions) {
				t.Fatalf("%d replies accepted for %d questions", len(r.Replies), len(p.Form.Questions))
			}
			for i, q := range p.Form.Questions {
				if i >= len(r.Replies) {
					if !q.Optional {
						t.Fatalf("required question %d left unanswered", i+1)
					}
					continue
				}
				choices := map[string]bool{}
				for _, o := range q.Choices() {
					choices[o.Label] = true
				}
				for _, s := range r.Replies[i].Selected {
					if len(choices) > 0 && !choices[s] {
						t.Fatalf("question %d: %q is not one of its options", i+1, s)
					}
				}
			}
		case KindPlan:
			if r.Mode != "" && r.Mode != "default" && r.Mode != "acceptEdits" {
				t.Fatalf("mode %q let through", r.Mode)
			}
		}
	})
}
