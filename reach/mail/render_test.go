package mail_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"parley/reach"
	"parley/reach/mail"
)

func TestSubject(t *testing.T) {
	long := strings.Repeat("word ", 60) // 300 characters
	tests := []struct{ title, want string }{
		{"Claude wants to run Bash", "[Parley] Claude wants to run Bash"},
		{"  Claude asks in web  \n", "[Parley] Claude asks in web"},
		{"Hi\r\nBcc: eve@evil.example\r\n\r\nbody", "[Parley] Hi Bcc: eve@evil.example body"},
		{"tab\there\u2028sep\x00nul\x1b[31m", "[Parley] tab here sep nul [31m"},
		{long, "[Parley] " + strings.TrimSpace(long[:140]) + "…"},
	}
	for _, tt := range tests {
		got := mail.Subject(tt.title)
		if got != tt.want {
			t.Errorf("Subject(%q) = %q, want %q", tt.title, got, tt.want)
		}
		if n := utf8.RuneCountInString(got); n > 150 {
			t.Errorf("Subject(%q) has %d characters, want ≤ 150", tt.title, n)
		}
	}
}

func TestRenderEscapesHTML(t *testing.T) {
	m := reach.Message{
		Type: reach.TypeAsk, Title: `Claude asks <b>"you"</b>`,
		Body:    "<script>alert(1)</script>\n& more",
		Project: "R&D <lab>", Session: "fix </p> bug",
		URL: "https://parley.example/sessions/7#ask-9",
	}
	links := []mail.Link{
		{Title: "<img src=x onerror=alert(2)>", URL: "https://parley.example/reach/a/tok?action=allow"},
		{Title: "Evil", URL: "javascript:alert(3)"},
	}
	subject, text, html, err := mail.Render(m, links)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"<script>", "<b>", "<img", "</p> bug", "<lab>", "javascript:"} {
		if strings.Contains(html, bad) {
			t.Errorf("HTML contains %q unescaped:\n%s", bad, html)
		}
	}
	for _, want := range []string{
		"&lt;script&gt;alert(1)&lt;/script&gt;", "&amp; more", "R&amp;D &lt;lab&gt; · fix &lt;/p&gt; bug",
		`href="https://parley.example/sessions/7#ask-9"`, `href="https://parley.example/reach/a/tok?action=allow"`,
		`href="#ZgotmplZ"`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("HTML lacks %q:\n%s", want, html)
		}
	}
	// The text part is text: shown as written.
	for _, want := range []string{m.Body, "R&D <lab> · fix </p> bug", "Open the ask: " + m.URL,
		"<img src=x onerror=alert(2)>: https://parley.example/reach/a/tok?action=allow"} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	if want := `[Parley] Claude asks <b>"you"</b>`; subject != want {
		t.Errorf("subject = %q, want %q", subject, want)
	}
}
