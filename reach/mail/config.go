// Package mail e-mails an ask to a person who opted in: the question or
// the tool call, a link to the ask, and one-click answer links, as a
// text and an HTML part, sent over SMTP (PARLEY_SMTP_URL).
package mail

import (
	"crypto/x509"
	"errors"
	"fmt"
	netmail "net/mail"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// TLS modes: how the connection to the SMTP server is protected.
const (
	// TLSStartTLS upgrades a plain connection with STARTTLS and refuses a
	// server that does not offer it (smtp://, the default).
	TLSStartTLS = "starttls"
	// TLSImplicit speaks TLS from the first byte (smtps://, port 465).
	TLSImplicit = "implicit"
	// TLSNone sends in the clear (smtp://…?tls=none). It is for a relay on
	// the same machine and for tests only: it must not be used across a
	// network, where anyone on the path reads the mail and its answer
	// links. Credentials are sent in the clear only to localhost.
	TLSNone = "none"
)

// DefaultTimeout bounds one Send when Config.Timeout is zero.
const DefaultTimeout = 30 * time.Second

// Config says how to reach the SMTP server and whom mail comes from.
type Config struct {
	Host     string
	Port     int
	Username string // empty: no SMTP AUTH
	Password string
	From     string // the From address, e.g. "Parley <parley@example.com>"
	TLS      string // TLSStartTLS, TLSImplicit or TLSNone
	// Timeout bounds one Send, connecting included (DefaultTimeout if 0).
	Timeout time.Duration
	// RootCAs verifies the server's certificate; nil: the system's roots
	// (a private CA, tests).
	RootCAs *x509.CertPool
}

// String shows the configuration without the password, for logs.
func (c Config) String() string {
	u := url.URL{Scheme: "smtp", Host: c.Host + ":" + strconv.Itoa(c.Port)}
	if c.TLS == TLSImplicit {
		u.Scheme = "smtps"
	}
	if c.Username != "" {
		u.User = url.User(c.Username)
	}
	q := url.Values{"from": {c.From}}
	if c.TLS == TLSNone {
		q.Set("tls", TLSNone)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

func (c Config) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultTimeout
}

// ParseURL reads PARLEY_SMTP_URL:
//
//	smtp://user:pass@host:587?from=parley@example.com   STARTTLS, required
//	smtps://user:pass@host:465?from=parley@example.com  implicit TLS
//	smtp://127.0.0.1:25?from=parley@example.com&tls=none  plain (local relay, tests)
//
// tls=none must not be used across a network: mail and its answer links
// would travel in the clear (Send then also refuses to send a password
// to any host but localhost).
// The user and password may be URL-escaped (p%40ss for p@ss). An optional
// timeout=10s bounds each send. Errors are sentences for the operator and
// never repeat the password.
func ParseURL(s string) (Config, error) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil {
		// url.Error repeats the whole URL, password included: keep its cause only.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return Config{}, fmt.Errorf("PARLEY_SMTP_URL is not a valid URL (%v): write it as smtp://user:password@host:587?from=parley@example.com", err)
	}
	c, err := parseScheme(u)
	if err != nil {
		return Config{}, err
	}
	if c.Port, err = parsePort(u, c.TLS); err != nil {
		return Config{}, err
	}
	if u.User != nil {
		c.Username = u.User.Username()
		c.Password, _ = u.User.Password()
	}
	if err := parseQuery(u, &c); err != nil {
		return Config{}, err
	}
	return c, nil
}

func parseScheme(u *url.URL) (Config, error) {
	var c Config
	switch u.Scheme {
	case "smtp":
		c.TLS = TLSStartTLS
	case "smtps":
		c.TLS = TLSImplicit
	default:
		return c, fmt.Errorf("PARLEY_SMTP_URL must start with smtp:// (STARTTLS) or smtps:// (implicit TLS), not %q", u.Scheme+"://")
	}
	c.Host = u.Hostname()
	if c.Host == "" {
		return c, errors.New("PARLEY_SMTP_URL has no host: write it as smtp://user:password@host:587?from=parley@example.com")
	}
	return c, nil
}

func parsePort(u *url.URL, mode string) (int, error) {
	p := u.Port()
	if p == "" {
		if mode == TLSImplicit {
			return 465, nil
		}
		return 587, nil
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > 65535 {
		return 0, fmt.Errorf("PARLEY_SMTP_URL has port %q: use a number from 1 to 65535, such as 587", p)
	}
	return n, nil
}

func parseQuery(u *url.URL, c *Config) error {
	q := u.Query()
	for k := range q {
		if k != "from" && k != "tls" && k != "timeout" {
			return fmt.Errorf("PARLEY_SMTP_URL has an unknown setting %q: the settings are from, tls and timeout", k)
		}
	}
	if err := parseTLS(q.Get("tls"), c); err != nil {
		return err
	}
	from := q.Get("from")
	if from == "" {
		return errors.New("PARLEY_SMTP_URL has no sender: add ?from=parley@example.com (the address mail comes from)")
	}
	if strings.ContainsAny(from, "\r\n") {
		return errors.New("PARLEY_SMTP_URL's from address has a line break: give one address, such as parley@example.com")
	}
	if _, err := netmail.ParseAddress(from); err != nil {
		return fmt.Errorf("PARLEY_SMTP_URL's from address %q is not an e-mail address: give one, such as parley@example.com", from)
	}
	c.From = from
	if t := q.Get("timeout"); t != "" {
		d, err := time.ParseDuration(t)
		if err != nil || d <= 0 {
			return fmt.Errorf("PARLEY_SMTP_URL's timeout %q is not a duration: write it as 10s or 1m", t)
		}
		c.Timeout = d
	}
	return nil
}

func parseTLS(v string, c *Config) error {
	switch {
	case v == "":
	case v == TLSNone && c.TLS == TLSStartTLS:
		c.TLS = TLSNone
	case v == TLSStartTLS && c.TLS == TLSStartTLS, v == TLSImplicit && c.TLS == TLSImplicit:
	case c.TLS == TLSImplicit:
		return fmt.Errorf("PARLEY_SMTP_URL: smtps:// always speaks TLS, so tls=%s does not apply: drop it, or use smtp:// for tls=none or tls=starttls", v)
	default:
		return fmt.Errorf("PARLEY_SMTP_URL has tls=%s: use tls=starttls (the default) or, for a relay on this machine only, tls=none", v)
	}
	return nil
}
