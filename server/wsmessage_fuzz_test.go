package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParseWSMessage feeds the WebSocket message parser what a hostile page
// could send. It never panics; it refuses with a sentence for the member;
// what it accepts holds only valid UTF-8 without NULs, so it is stored and
// sent to Claude exactly as typed.
func FuzzParseWSMessage(f *testing.F) {
	f.Add([]byte(`{"action":"prompt","text":"hello","HEADERS":{"HX-Request":"true"}}`))
	f.Add([]byte(`{"action":"answer","input_id":"i","choice":["a","b"],"other":"x"}`))
	f.Add([]byte(`{"action":"answer","choice":"one"}`))
	f.Add([]byte(`{"action":"hello","after":-5}`))
	f.Add([]byte(`{"action":"prompt","text":"a\u0000b"}`))
	f.Add([]byte(`{"action":"prompt","text":"\ud83d\ude00 \ud800 \\ud800"}`))
	f.Add([]byte("{\"action\":\"prompt\",\"text\":\"\xff\"}"))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := parseWSMessage(data)
		if err != nil {
			var he *httpError
			if !errors.As(err, &he) || he.msg == "" {
				t.Fatalf("refusal is not a sentence for the member: %#v", err)
			}
			return
		}
		for _, s := range append([]string{m.Action, m.Text, m.InputID, m.Other}, m.Choice...) {
			if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
				t.Fatalf("accepted a field that is not storable text: %q", s)
			}
			if strings.ContainsRune(s, utf8.RuneError) && !bytes.Contains(data, []byte("\uFFFD")) && !bytes.Contains(bytes.ToLower(data), []byte(`\ufffd`)) {
				t.Fatalf("a replacement character appeared that was not sent: %q", data)
			}
		}
		if !bytes.Equal(m.raw, data) {
			t.Fatal("the message's raw text is not what was sent")
		}
		var obj map[string]any
		if json.Unmarshal(data, &obj) != nil || obj == nil {
			t.Fatalf("accepted a message that is not a JSON object: %q", data)
		}
	})
}
