package mail_test

import (
	"strings"
	"testing"

	"parley/reach/mail"
	"parley/reach/mail/smtptest"
)

// smtp:// without tls=none requires STARTTLS: a server that does not offer
// it gets no mail.
func TestSendRequiresStartTLS(t *testing.T) {
	s := smtptest.New(t) // plain only
	c := config(t, s)
	c.TLS = mail.TLSStartTLS
	err := mail.Send(t.Context(), c, "ann@example.com", ask(), nil)
	if err == nil || !strings.Contains(err.Error(), "STARTTLS") {
		t.Errorf("Send over STARTTLS to a server without it: err %v, want a STARTTLS error", err)
	}
	if s.Count() != 0 {
		t.Errorf("the server took %d mails in the clear", s.Count())
	}
}

func TestSendTLSWithAuth(t *testing.T) {
	tests := []struct {
		name string
		opt  smtptest.Option
		mode string
	}{
		{"starttls", smtptest.WithStartTLS(), mail.TLSStartTLS},
		{"implicit", smtptest.WithImplicitTLS(), mail.TLSImplicit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := smtptest.New(t, tt.opt, smtptest.WithAuth("ann@corp", "p@ss w/rd:1"))
			c := config(t, s) // from s.URL(): user and password URL-escaped
			if c.TLS != tt.mode || c.Password != "p@ss w/rd:1" {
				t.Fatalf("config %v, TLS %q password %q", c, c.TLS, c.Password)
			}
			if err := mail.Send(t.Context(), c, "ann@example.com", ask(), answerLinks()); err != nil {
				t.Fatal(err)
			}
			if got := next(t, s); got.Subject != "[Parley] Claude wants to run Bash" {
				t.Errorf("subject = %q", got.Subject)
			}
			c.Password = "wrong"
			if err := mail.Send(t.Context(), c, "ann@example.com", ask(), nil); err == nil {
				t.Error("Send with a wrong password: no error")
			}
			if s.Count() != 1 || s.Refused() == 0 {
				t.Errorf("count %d refused %d, want 1 and some", s.Count(), s.Refused())
			}
		})
	}
}

// An unknown CA's certificate is refused: the mail and the password stay.
func TestSendRefusesUntrustedCertificate(t *testing.T) {
	s := smtptest.New(t, smtptest.WithStartTLS(), smtptest.WithAuth("ann", "secret"))
	c := config(t, s)
	c.RootCAs = nil // the system's roots do not know smtptest's CA
	err := mail.Send(t.Context(), c, "ann@example.com", ask(), nil)
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("err = %v, want a certificate error", err)
	}
	if s.Count() != 0 || s.Refused() != 0 {
		t.Errorf("count %d refused %d: something went past the handshake", s.Count(), s.Refused())
	}
}

// tls=none sends the password only to localhost: to another host it is
// refused before it leaves (127.0.0.2 is loopback, but not "localhost"
// by name, as a relay across the network would not be).
func TestSendNoPasswordInTheClear(t *testing.T) {
	s := smtptest.New(t, smtptest.WithListenAddr("127.0.0.2:0"), smtptest.WithAuth("ann", "secret"))
	c := config(t, s)
	if c.Host != "127.0.0.2" || c.TLS != mail.TLSNone {
		t.Fatalf("config %v", c)
	}
	err := mail.Send(t.Context(), c, "ann@example.com", ask(), nil)
	if err == nil {
		t.Fatal("Send with a password over tls=none to 127.0.0.2: no error")
	}
	if s.Count() != 0 || s.Refused() != 0 {
		t.Errorf("count %d refused %d: the password was sent", s.Count(), s.Refused())
	}
	t.Logf("refused: %v", err)
}
