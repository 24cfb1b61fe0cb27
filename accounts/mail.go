package accounts

import (
	"context"
	"crypto/tls"
	"fmt"
	netmail "net/mail"
	"strings"

	gomail "github.com/wneessen/go-mail"

	"parley/reach/mail"
)

// sendText mails a plain-text message to one address through the SMTP
// server of c (PARLEY_SMTP_URL, read by package reach/mail). reach/mail's
// Send renders an ask; an account link is a short plain text, so this
// speaks go-mail directly with the same TLS modes: STARTTLS required,
// implicit TLS, or none (a relay on this machine).
func sendText(ctx context.Context, c mail.Config, to, subject, text string) error {
	if strings.ContainsAny(to, "\r\n") {
		return fmt.Errorf("mail to %q: the address has a line break", to)
	}
	rcpt, err := netmail.ParseAddress(to)
	if err != nil {
		return fmt.Errorf("mail to %q: %w", to, err)
	}
	msg := gomail.NewMsg()
	if err := msg.From(c.From); err != nil {
		return fmt.Errorf("mail from %q: %w", c.From, err)
	}
	if err := msg.To(rcpt.String()); err != nil {
		return fmt.Errorf("mail to %q: %w", to, err)
	}
	msg.Subject(subject)
	msg.SetMessageID()
	msg.SetDate()
	msg.SetGenHeader("Auto-Submitted", "auto-generated") // RFC 3834: no vacation replies
	msg.SetBodyString(gomail.TypeTextPlain, text)
	client, err := gomail.NewClient(c.Host, clientOptions(c)...)
	if err != nil {
		return fmt.Errorf("mail client for %s: %w", c.Host, err)
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = mail.DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := client.DialAndSendWithContext(ctx, msg); err != nil {
		return fmt.Errorf("send mail via %s:%d: %w", c.Host, c.Port, err)
	}
	return nil
}

func clientOptions(c mail.Config) []gomail.Option {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = mail.DefaultTimeout
	}
	opts := []gomail.Option{gomail.WithPort(c.Port), gomail.WithTimeout(timeout),
		gomail.WithTLSConfig(&tls.Config{ServerName: c.Host, MinVersion: tls.VersionTLS12, RootCAs: c.RootCAs})}
	switch c.TLS {
	case mail.TLSImplicit:
		opts = append(opts, gomail.WithSSL())
	case mail.TLSNone:
		opts = append(opts, gomail.WithTLSPolicy(gomail.NoTLS))
	default: // STARTTLS, and a server that does not offer it is refused
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSMandatory))
	}
	if c.Username != "" {
		// PLAIN and LOGIN refuse to send the password unencrypted except
		// to localhost (go-mail's smtp.PlainAuth).
		opts = append(opts, gomail.WithUsername(c.Username), gomail.WithPassword(c.Password),
			gomail.WithOpportunisticSMTPAuth(gomail.SMTPAuthSCRAMSHA256, gomail.SMTPAuthSCRAMSHA1,
				gomail.SMTPAuthCramMD5, gomail.SMTPAuthPlain, gomail.SMTPAuthLogin))
	}
	return opts
}
