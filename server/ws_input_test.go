package server

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"parley/runner/fakeapi"
)

func TestCheckUTF8(t *testing.T) {
	tests := []struct {
		name string
		in   string
		ok   bool
	}{
		{"ascii", `{"text":"hello"}`, true},
		{"utf8", `{"text":"héllo — 日本"}`, true},
		{"escaped pair", `{"text":"\ud83d\ude00"}`, true},
		{"escaped backslash then u", `{"text":"\\udc00"}`, true},
		{"raw invalid byte", "{\"text\":\"a\xffb\"}", false},
		{"truncated sequence", "{\"text\":\"a\xe6\x97\"}", false},
		{"lone low surrogate", `{"text":"a\udc00b"}`, false},
		{"lone high surrogate", `{"text":"a\ud83db"}`, false},
		{"high then non-low", `{"text":"\ud83d\u0041"}`, false},
		{"high at the end", `{"text":"\ud83d`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkUTF8([]byte(tt.in))
			if got := err == nil; got != tt.ok {
				t.Errorf("checkUTF8(%q) = %v, want ok %v", tt.in, err, tt.ok)
			}
		})
	}
}

func TestSizeText(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{300 << 10, "300 KiB"},
		{256 << 10, "256 KiB"},
		{256<<10 + 1, "257 KiB"},
		{2 << 20, "2.0 MiB"},
	}
	for _, tt := range tests {
		if got := sizeText(tt.n); got != tt.want {
			t.Errorf("sizeText(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

func TestAccessEnded(t *testing.T) {
	tests := []struct {
		name  string
		err   error
		code  int
		ended bool
	}{
		{"signed out", errSignedOut, closeSignedOut, true},
		{"removed", errNotFound, closeRemoved, true},
		{"role too low", forbiddenFor(actView), closeRemoved, true},
		{"database down", fmt.Errorf("get session: %w", errors.New("connection refused")), 0, false},
	}
	for _, tt := range tests {
		code, reason, ended := accessEnded(tt.err)
		if code != tt.code || ended != tt.ended || (ended && (reason == "" || len(reason) > 123)) {
			t.Errorf("%s: accessEnded = %d, %q, %v; want %d, %v", tt.name, code, reason, ended, tt.code, tt.ended)
		}
	}
}

// TestFaultOversizedFrameAnswered sends what no page sends: a prompt over
// the limit, a message over what the server reads into memory, invalid
// UTF-8 and a JSON-escaped lone surrogate. Each gets an error frame that
// says why; the socket stays open and the next prompt is answered.
func TestFaultOversizedFrameAnswered(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "Answered after the refusals."}}, envOptions{quiet: true})
	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt(strings.Repeat("x", 300<<10))
	w.waitFor(30*time.Second, "This message is 300 KiB; the limit is 256 KiB.")
	big := `{"action":"prompt","text":"` + strings.Repeat("y", 2<<20) + `"}`
	if err := w.conn.WriteMessage(websocket.TextMessage, []byte(big)); err != nil {
		t.Fatal(err)
	}
	w.waitFor(30*time.Second, "This message is 2.0 MiB; the limit is 256 KiB.")
	for _, bad := range []string{"{\"action\":\"prompt\",\"text\":\"caf\xe9\"}", `{"action":"prompt","text":"a\udc00b"}`} {
		if err := w.conn.WriteMessage(websocket.TextMessage, []byte(bad)); err != nil {
			t.Fatal(err)
		}
		w.waitFor(30*time.Second, "not valid UTF-8 text")
	}
	if n := len(e.fake.Requests()); n != 0 {
		t.Fatalf("the model got %d requests from refused messages", n)
	}
	w.prompt("a normal prompt")
	w.waitFor(60*time.Second, "Answered after the refusals.")
}

// TestInvalidUTF8FormRefused: a form field that is not UTF-8 once decoded
// gets a 400 that says so, never a quietly replaced value.
func TestInvalidUTF8FormRefused(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "never"}}, envOptions{quiet: true})
	for _, tc := range []struct{ path, field string }{
		{fmt.Sprintf("/projects/%d/sessions", e.project.ID), "text"},
		{fmt.Sprintf("/projects/%d/rename", e.project.ID), "name"},
	} {
		resp := e.postAs(e.user, tc.path, url.Values{tc.field: {"caf\xe9"}})
		if body := readAll(resp); resp.StatusCode != 400 || !strings.Contains(body, "not valid UTF-8 text") {
			t.Errorf("POST %s with invalid UTF-8 = %d:\n%s", tc.path, resp.StatusCode, body)
		}
	}
	if n := len(e.fake.Requests()); n != 0 {
		t.Errorf("the model got %d requests", n)
	}
	p, err := e.st.GetProject(t.Context(), e.project.ID)
	if err != nil || p.Name != e.project.Name {
		t.Errorf("project = %q, %v; want the name unchanged (%q)", p.Name, err, e.project.Name)
	}
}
