package mail

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	netmail "net/mail"
	"strings"

	gomail "github.com/wneessen/go-mail"

	"parley/reach"
)

// Send mails the ask m to one address, with a button for each link. A
// message of type "answered" is not mailed (Send returns nil): a mail
// cannot be taken back, and its answer links already say "already
// answered". The send is bounded by c.Timeout and ends when ctx does.
// An address with a line break, or more than one address, is refused.
func Send(ctx context.Context, c Config, to string, m reach.Message, links []Link) error {
	if m.Type == reach.TypeAnswered {
		return nil
	}
	msg, err := build(c, to, m, links)
	if err != nil {
		return err
	}
	return send(ctx, c, msg)
}

// SendText mails a short plain-text message (an invitation, a password
// reset) to one address, through the same client as Send.
func SendText(ctx context.Context, c Config, to, subject, text string) error {
	msg, err := newMsg(c, to, subject)
	if err != nil {
		return err
	}
	msg.SetBodyString(gomail.TypeTextPlain, text)
	return send(ctx, c, msg)
}

// send delivers msg through the SMTP server of c, bounded by c.Timeout
// and by ctx.
func send(ctx context.Context, c Config, msg *gomail.Msg) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout())
	defer cancel()
	client, err := newClient(ctx, c)
	if err != nil {
		return err
	}
	if err := client.DialAndSendWithContext(ctx, msg); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		return fmt.Errorf("send mail via %s:%d: %w", c.Host, c.Port, err)
	}
	return nil
}

// build makes the message. go-mail writes the subject as an encoded word
// and the addresses from net/mail, but the checks here do not rely on it.
func build(c Config, to string, m reach.Message, links []Link) (*gomail.Msg, error) {
	subject, text, html, err := Render(m, links)
	if err != nil {
		return nil, err
	}
	msg, err := newMsg(c, to, subject)
	if err != nil {
		return nil, err
	}
	msg.SetBodyString(gomail.TypeTextPlain, text)
	msg.AddAlternativeString(gomail.TypeTextHTML, html)
	return msg, nil
}

// newMsg makes a message to one address with its headers and no body.
func newMsg(c Config, to, subject string) (*gomail.Msg, error) {
	rcpt, err := recipient(to)
	if err != nil {
		return nil, err
	}
	msg := gomail.NewMsg()
	if err := msg.From(c.From); err != nil {
		return nil, fmt.Errorf("mail from %q: %w", c.From, err)
	}
	if err := msg.To(rcpt); err != nil {
		return nil, fmt.Errorf("mail to %q: %w", rcpt, err)
	}
	msg.Subject(subject)
	msg.SetMessageID()
	msg.SetDate()
	// RFC 3834: a machine-sent notification; vacation replies skip it.
	msg.SetGenHeader("Auto-Submitted", "auto-generated")
	return msg, nil
}

// recipient checks that to is exactly one address on one line.
func recipient(to string) (string, error) {
	if strings.ContainsAny(to, "\r\n") {
		return "", fmt.Errorf("the e-mail address %q has a line break: give one address on one line", to)
	}
	a, err := netmail.ParseAddress(to)
	if err != nil {
		return "", fmt.Errorf("%q is not one e-mail address: give one, such as ann@example.com", to)
	}
	return a.String(), nil
}

// newClient configures go-mail for c. It dials itself so that the
// connection closes when ctx ends: go-mail's own context covers only the
// dial, later it relies on deadlines of its timeout.
func newClient(ctx context.Context, c Config) (*gomail.Client, error) {
	opts := []gomail.Option{
		gomail.WithPort(c.Port),
		gomail.WithTimeout(c.timeout()),
		gomail.WithDialContextFunc(dialer(ctx, c)),
		gomail.WithTLSConfig(tlsConfig(c)),
	}
	switch c.TLS {
	case TLSStartTLS:
		// "TLSMandatory": a server that does not offer STARTTLS is refused.
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSMandatory))
	case TLSImplicit, TLSNone:
		// No STARTTLS: for TLSImplicit the dialer already speaks TLS, and
		// go-mail's SMTP client sees the *tls.Conn (AUTH checks it).
		opts = append(opts, gomail.WithTLSPolicy(gomail.NoTLS))
	default:
		return nil, fmt.Errorf("mail config: unknown TLS mode %q", c.TLS)
	}
	if c.Username != "" {
		opts = append(opts,
			gomail.WithUsername(c.Username), gomail.WithPassword(c.Password),
			// PLAIN and LOGIN refuse to send the password unencrypted
			// except to localhost (go-mail's smtp.PlainAuth).
			gomail.WithOpportunisticSMTPAuth(authMechs(c)...))
	}
	client, err := gomail.NewClient(c.Host, opts...)
	if err != nil {
		return nil, fmt.Errorf("mail client for %s: %w", c.Host, err)
	}
	return client, nil
}

func authMechs(c Config) []gomail.SMTPAuthType {
	mechs := []gomail.SMTPAuthType{gomail.SMTPAuthSCRAMSHA256, gomail.SMTPAuthSCRAMSHA1,
		gomail.SMTPAuthCramMD5, gomail.SMTPAuthPlain, gomail.SMTPAuthLogin}
	if c.TLS != TLSNone {
		// Channel binding needs the TLS connection state.
		mechs = append([]gomail.SMTPAuthType{gomail.SMTPAuthSCRAMSHA256PLUS, gomail.SMTPAuthSCRAMSHA1PLUS}, mechs...)
	}
	return mechs
}

func tlsConfig(c Config) *tls.Config {
	return &tls.Config{ServerName: c.Host, MinVersion: tls.VersionTLS12, RootCAs: c.RootCAs}
}

// dialer connects (with TLS for TLSImplicit) and closes the connection
// when ctx ends. It watches the ctx of Send, not the one go-mail passes,
// which go-mail cancels as soon as the dial returns.
func dialer(ctx context.Context, c Config) gomail.DialContextFunc {
	return func(dialCtx context.Context, network, addr string) (net.Conn, error) {
		nd := &net.Dialer{}
		var conn net.Conn
		var err error
		if c.TLS == TLSImplicit {
			conn, err = (&tls.Dialer{NetDialer: nd, Config: tlsConfig(c)}).DialContext(dialCtx, network, addr)
		} else {
			conn, err = nd.DialContext(dialCtx, network, addr)
		}
		if err != nil {
			return nil, err
		}
		// Send's deferred cancel runs this too: closing twice is harmless.
		context.AfterFunc(ctx, func() { _ = conn.Close() })
		return conn, nil
	}
}
