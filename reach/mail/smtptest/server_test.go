package smtptest_test

import (
	"context"
	"net/smtp"
	"strings"
	"testing"
	"time"

	"parley/reach/mail/smtptest"
)

// A message from another client (net/smtp): nested multipart, a
// quoted-printable and a base64 part, an encoded-word subject.
const raw = "From: a@test.example\r\n" +
	"To: b@test.example\r\n" +
	"Subject: =?UTF-8?Q?caf=C3=A9_=E2=9C=93?=\r\n" +
	"MIME-Version: 1.0\r\n" +
	"Content-Type: multipart/mixed; boundary=outer\r\n\r\n" +
	"--outer\r\n" +
	"Content-Type: multipart/alternative; boundary=inner\r\n\r\n" +
	"--inner\r\n" +
	"Content-Type: text/plain; charset=UTF-8\r\n" +
	"Content-Transfer-Encoding: quoted-printable\r\n\r\n" +
	"a long line that was soft=\r\n broken, caf=C3=A9\r\n" +
	"--inner\r\n" +
	"Content-Type: text/html; charset=UTF-8\r\n" +
	"Content-Transfer-Encoding: base64\r\n\r\n" +
	"PHA+Y2Fmw6k8L3A+\r\n" +
	"--inner--\r\n" +
	"--outer--\r\n"

func TestServerParses(t *testing.T) {
	s := smtptest.New(t)
	if err := smtp.SendMail(s.Addr, nil, "a@test.example", []string{"b@test.example", "c@test.example"}, []byte(raw)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	m, err := s.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m.Subject != "café ✓" || m.Text != "a long line that was soft broken, café" ||
		m.HTML != "<p>café</p>" || m.From != "a@test.example" || strings.Join(m.To, ",") != "b@test.example,c@test.example" {
		t.Errorf("got subject %q text %q html %q from %q to %q", m.Subject, m.Text, m.HTML, m.From, m.To)
	}
	if s.Count() != 1 || s.URL() != "smtp://"+s.Addr+"?tls=none&from=parley@test.example" {
		t.Errorf("count %d, URL %q", s.Count(), s.URL())
	}
}

func TestServerRequiresAuth(t *testing.T) {
	s := smtptest.New(t, smtptest.WithAuth("ann", "secret"))
	if err := smtp.SendMail(s.Addr, nil, "a@test.example", []string{"b@test.example"}, []byte(raw)); err == nil {
		t.Error("mail without AUTH was taken")
	}
	auth := smtp.PlainAuth("", "ann", "secret", "127.0.0.1")
	if err := smtp.SendMail(s.Addr, auth, "a@test.example", []string{"b@test.example"}, []byte(raw)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if _, err := s.Next(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Next(ctx); err == nil {
		t.Error("Next returned a second mail")
	}
}
