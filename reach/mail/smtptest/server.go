// Package smtptest runs a real SMTP server (emersion/go-smtp) on a
// loopback port for tests: it takes mail like any server, parses each
// message (MIME, quoted-printable, base64) and hands it to the test.
package smtptest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// From is the sender address URL puts in ?from=.
const From = "parley@test.example"

// Server is an SMTP server on 127.0.0.1 that keeps what it receives.
type Server struct {
	// Addr is host:port of the server.
	Addr string

	srv        *smtp.Server
	mode       string // "none", "starttls", "implicit"
	listenAddr string
	user       string
	pass       string
	roots      *x509.CertPool
	mails      chan Mail
	count      atomic.Int64
	refused    atomic.Int64
	sessions   atomic.Int64
}

// Option changes what New starts.
type Option func(*Server)

// WithAuth requires AUTH PLAIN with this user and password before MAIL.
func WithAuth(user, pass string) Option {
	return func(s *Server) { s.user, s.pass = user, pass }
}

// WithListenAddr listens on another loopback address, such as
// "127.0.0.2:0" (a host a client does not take for localhost).
func WithListenAddr(addr string) Option { return func(s *Server) { s.listenAddr = addr } }

// WithStartTLS offers STARTTLS with a certificate for 127.0.0.1 that
// RootCAs trusts.
func WithStartTLS() Option { return func(s *Server) { s.mode = "starttls" } }

// WithImplicitTLS speaks TLS from the first byte (as on port 465).
func WithImplicitTLS() Option { return func(s *Server) { s.mode = "implicit" } }

// New starts a server for the test and stops it when the test ends.
func New(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s := &Server{mode: "none", listenAddr: "127.0.0.1:0", mails: make(chan Mail, 64)}
	for _, o := range opts {
		o(s)
	}
	s.srv = smtp.NewServer(backend{s})
	s.srv.Domain = "smtptest.local"
	s.srv.AllowInsecureAuth = true
	s.srv.MaxMessageBytes = 1 << 20
	s.srv.ReadTimeout = 10 * time.Second
	s.srv.WriteTimeout = 10 * time.Second
	s.srv.ErrorLog = testLogger{t}
	ln, err := s.listen()
	if err != nil {
		t.Fatalf("smtptest: %v", err)
	}
	s.Addr = ln.Addr().String()
	tl := &trackingListener{Listener: ln}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.srv.Serve(tl) // returns nil once Shutdown closed the listener
	}()
	t.Cleanup(func() {
		// go-smtp's Close does not wait for its connection goroutines and
		// Shutdown waits for idle clients: close the listener and the
		// clients' connections here (Serve may not have registered the
		// listener yet, so Shutdown alone could miss it), then Shutdown
		// waits for every handler, so none logs after the test.
		tl.closeAll()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		// Shutdown's other error is closing the listener closed above.
		if err := s.srv.Shutdown(ctx); errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("smtptest: shutdown: %v", err)
		}
		<-done
	})
	return s
}

func (s *Server) listen() (net.Listener, error) {
	ln, err := net.Listen("tcp", s.listenAddr)
	if err != nil || s.mode == "none" {
		return ln, err
	}
	cert, roots, err := selfSigned()
	if err != nil {
		ln.Close()
		return nil, err
	}
	s.roots = roots
	s.srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
	if s.mode == "implicit" {
		return tls.NewListener(ln, s.srv.TLSConfig), nil
	}
	return ln, nil
}

// URL is the server as PARLEY_SMTP_URL: smtp://127.0.0.1:port?tls=none&from=…
// (with the user and password of WithAuth; STARTTLS or smtps:// when the
// server speaks TLS).
func (s *Server) URL() string {
	u := url.URL{Scheme: "smtp", Host: s.Addr, RawQuery: "from=" + From}
	switch s.mode {
	case "none":
		u.RawQuery = "tls=none&" + u.RawQuery
	case "implicit":
		u.Scheme = "smtps"
	}
	if s.user != "" {
		u.User = url.UserPassword(s.user, s.pass)
	}
	return u.String()
}

// Port is the server's port.
func (s *Server) Port() int {
	_, p, _ := net.SplitHostPort(s.Addr)
	n, _ := strconv.Atoi(p)
	return n
}

// RootCAs trusts the server's certificate (nil without TLS).
func (s *Server) RootCAs() *x509.CertPool { return s.roots }

// Next returns the next message received, waiting for it until ctx ends.
func (s *Server) Next(ctx context.Context) (Mail, error) {
	select {
	case m := <-s.mails:
		return m, nil
	case <-ctx.Done():
		return Mail{}, fmt.Errorf("smtptest: no mail (%d received before): %w", s.Count(), ctx.Err())
	}
}

// Count is how many messages the server accepted.
func (s *Server) Count() int { return int(s.count.Load()) }

// Refused is how many AUTH attempts or messages the server refused.
func (s *Server) Refused() int { return int(s.refused.Load()) }

// Sessions is how many SMTP connections the server has seen.
func (s *Server) Sessions() int { return int(s.sessions.Load()) }

type backend struct{ s *Server }

func (b backend) NewSession(c *smtp.Conn) (smtp.Session, error) {
	b.s.sessions.Add(1)
	return &session{s: b.s}, nil
}

// session is one SMTP conversation.
type session struct {
	s      *Server
	authed bool
	from   string
	to     []string
}

func (se *session) AuthMechanisms() []string {
	if se.s.user == "" {
		return nil
	}
	return []string{sasl.Plain}
}

func (se *session) Auth(mech string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user != se.s.user || pass != se.s.pass {
			se.s.refused.Add(1)
			return errors.New("invalid user or password")
		}
		se.authed = true
		return nil
	}), nil
}

func (se *session) Mail(from string, _ *smtp.MailOptions) error {
	if se.s.user != "" && !se.authed {
		se.s.refused.Add(1)
		return smtp.ErrAuthRequired
	}
	se.from = from
	return nil
}

func (se *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	se.to = append(se.to, to)
	return nil
}

func (se *session) Data(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	m, err := parse(raw)
	if err != nil {
		se.s.refused.Add(1)
		return &smtp.SMTPError{Code: 554, EnhancedCode: smtp.EnhancedCode{5, 6, 0}, Message: "smtptest: " + err.Error()}
	}
	m.From, m.To = se.from, append([]string(nil), se.to...)
	select {
	case se.s.mails <- m:
		se.s.count.Add(1)
		return nil
	default:
		return &smtp.SMTPError{Code: 452, EnhancedCode: smtp.EnhancedCode{4, 3, 1}, Message: "smtptest: too many unread mails"}
	}
}

func (se *session) Reset() { se.from, se.to = "", nil }

func (se *session) Logout() error { return nil }

// testLogger reports the server's internal errors in the test log.
type testLogger struct{ t testing.TB }

func (l testLogger) Printf(format string, v ...any) { l.t.Logf("smtptest: "+format, v...) }
func (l testLogger) Println(v ...any)               { l.t.Log(append([]any{"smtptest:"}, v...)...) }

// trackingListener remembers the connections it accepts so that a test's
// end can close them; once closing, it closes each new one at once.
type trackingListener struct {
	net.Listener
	mu      sync.Mutex
	closing bool
	conns   []net.Conn
}

func (l *trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closing {
		c.Close()
	}
	l.conns = append(l.conns, c)
	return c, nil
}

func (l *trackingListener) closeAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closing = true
	_ = l.Listener.Close()
	for _, c := range l.conns {
		c.Close()
	}
}
