package mail_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"parley/reach/mail"
)

func TestParseURL(t *testing.T) {
	tests := []struct {
		in   string
		want mail.Config
	}{
		{"smtp://ann:secret@mail.example.com:587?from=parley@example.com",
			mail.Config{Host: "mail.example.com", Port: 587, Username: "ann", Password: "secret", From: "parley@example.com", TLS: mail.TLSStartTLS}},
		{"smtp://mail.example.com?from=parley@example.com",
			mail.Config{Host: "mail.example.com", Port: 587, From: "parley@example.com", TLS: mail.TLSStartTLS}},
		{"smtp://mail.example.com?from=parley@example.com&tls=starttls",
			mail.Config{Host: "mail.example.com", Port: 587, From: "parley@example.com", TLS: mail.TLSStartTLS}},
		{"smtps://ann%40corp:p%40ss%2Fw%3Ard@mail.example.com?from=parley@example.com",
			mail.Config{Host: "mail.example.com", Port: 465, Username: "ann@corp", Password: "p@ss/w:rd", From: "parley@example.com", TLS: mail.TLSImplicit}},
		{"smtp://127.0.0.1:2525?tls=none&from=parley@test.example&timeout=5s",
			mail.Config{Host: "127.0.0.1", Port: 2525, From: "parley@test.example", TLS: mail.TLSNone, Timeout: 5 * time.Second}},
		{"smtp://[::1]:25?tls=none&from=Parley%20%3Cparley@example.com%3E",
			mail.Config{Host: "::1", Port: 25, From: "Parley <parley@example.com>", TLS: mail.TLSNone}},
	}
	for _, tt := range tests {
		got, err := mail.ParseURL(tt.in)
		if err != nil {
			t.Errorf("ParseURL(%q): %v", tt.in, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreUnexported(mail.Config{})); diff != "" {
			t.Errorf("ParseURL(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestParseURLErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"smtp://mail.example.com:587", "no sender: add ?from="},
		{"smtp://mail.example.com?from=", "no sender"},
		{"http://mail.example.com?from=parley@example.com", "must start with smtp://"},
		{"smtp://?from=parley@example.com", "no host"},
		{"smtps://mail.example.com?tls=none&from=parley@example.com", "smtps:// always speaks TLS"},
		{"smtp://mail.example.com?tls=maybe&from=parley@example.com", "tls=maybe"},
		{"smtp://mail.example.com:99999?from=parley@example.com", "from 1 to 65535"},
		{"smtp://mail.example.com?form=parley@example.com", `unknown setting "form"`},
		{"smtp://mail.example.com?from=not-an-address", "not an e-mail address"},
		{"smtp://mail.example.com?from=parley@example.com%0D%0ABcc:eve@example.com", "line break"},
		{"smtp://mail.example.com?from=parley@example.com&timeout=soon", "not a duration"},
		// url.Parse's own error repeats the URL: the password must not show.
		{"smtp://ann:s3cret-pw@mail.example.com:5x7?from=parley@example.com", "not a valid URL"},
	}
	for _, tt := range tests {
		_, err := mail.ParseURL(tt.in)
		if err == nil {
			t.Errorf("ParseURL(%q) = nil error, want one with %q", tt.in, tt.want)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseURL(%q) = %q, want it to contain %q", tt.in, err, tt.want)
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("ParseURL(%q) = %q: the error shows the password", tt.in, err)
		}
	}
}

func TestConfigStringHidesPassword(t *testing.T) {
	c, err := mail.ParseURL("smtps://ann:s3cret-pw@mail.example.com?from=parley@example.com")
	if err != nil {
		t.Fatal(err)
	}
	got := c.String()
	if strings.Contains(got, "s3cret") || !strings.Contains(got, "smtps://ann@mail.example.com:465") {
		t.Errorf("String() = %q, want smtps://ann@mail.example.com:465… without the password", got)
	}
}
