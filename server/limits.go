package server

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/websocket"

	"parley/hub"
	"parley/limit"
	"parley/views"
)

// Limits are the per-user limits of the web surface; 0 = no limit.
type Limits struct {
	SessionsPerMinute int // new sessions a user may start a minute
	PromptsPerMinute  int // prompts (and retries) a user may send a minute
	UploadsPerMinute  int // attachments a user may upload a minute
	WSPerUser         int // WebSockets a user may hold open at once
	LoginsPerMinute   int // sign-in attempts per client address a minute, counted in Postgres (login_throttle.go)
}

// DefaultLimits are the limits when none are configured.
var DefaultLimits = Limits{SessionsPerMinute: 10, PromptsPerMinute: 30, UploadsPerMinute: 60, WSPerUser: 20, LoginsPerMinute: 30}

// limiters hold the state of the Limits.
type limiters struct {
	sessions *limit.Rate
	prompts  *limit.Rate
	uploads  *limit.Rate
	ws       *limit.Conns
	// bcrypt bounds the password checks of sign-ins: one per CPU at once,
	// so a flood of logins queues (and then gets "busy") instead of taking
	// every CPU from the signed-in users.
	bcrypt *limit.Pool
}

func newLimiters(l Limits) *limiters {
	return &limiters{sessions: limit.NewRate(l.SessionsPerMinute), prompts: limit.NewRate(l.PromptsPerMinute),
		uploads: limit.NewRate(l.UploadsPerMinute), ws: limit.NewConns(l.WSPerUser), bcrypt: limit.NewPool(runtime.NumCPU(), 5*time.Second)}
}

// tooMany is the refusal of an action over its rate.
func tooMany(what string, perMinute int, wait time.Duration) error {
	secs := int(wait.Round(time.Second) / time.Second)
	return &httpError{http.StatusTooManyRequests, fmt.Sprintf(
		"You are %s too quickly (the limit is %d a minute): try again in %d seconds.", what, perMinute, max(secs, 1))}
}

// allowSession counts a new session of the user against the rate.
func (s *Server) allowSession(userID int64) error {
	if ok, wait := s.lim.sessions.Allow(fmt.Sprint(userID)); !ok {
		return tooMany("starting sessions", s.lim.sessions.PerMinute(), wait)
	}
	return nil
}

// allowPrompt counts a prompt of the user against the rate.
func (s *Server) allowPrompt(userID int64) error {
	if ok, wait := s.lim.prompts.Allow(fmt.Sprint(userID)); !ok {
		return tooMany("sending messages", s.lim.prompts.PerMinute(), wait)
	}
	return nil
}

// allowUpload counts an attachment the user uploads against the rate.
func (s *Server) allowUpload(userID int64) error {
	if ok, wait := s.lim.uploads.Allow(fmt.Sprint(userID)); !ok {
		return tooMany("uploading files", s.lim.uploads.PerMinute(), wait)
	}
	return nil
}

// Body limits: a prompt may be 256 KB of text, which a form encodes in up
// to three times as many bytes (and the MCP endpoint carries in JSON); the
// settings form carries the project's instructions. Everything else is a
// small form.
const (
	defaultBodyBytes = 64 << 10
	largeBodyBytes   = 1 << 20
)

func bodyLimitFor(r *http.Request) int64 {
	p := r.URL.Path
	if n := attachBodyLimit(r); n > 0 { // attach.go
		return n
	}
	if p == "/sessions" || p == "/mcp" || (strings.HasPrefix(p, "/projects/") && (strings.HasSuffix(p, "/sessions") || strings.HasSuffix(p, "/settings"))) {
		return largeBodyBytes
	}
	return defaultBodyBytes
}

func (s *Server) tooLarge(w http.ResponseWriter, r *http.Request, n int64) {
	s.fail(w, r, &httpError{http.StatusRequestEntityTooLarge, "That request is too large (the limit is " + limit.Size(n) +
		"): shorten what you sent and try again."})
}

// contentSecurityPolicy allows scripts, styles, images and connections
// from Parley itself only: no inline script or style, no eval, no plugin,
// no framing (clickjacking), and forms post only here.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// securityHeaders sets the headers every response carries.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		next.ServeHTTP(w, r)
	})
}

// NewHTTPServer is the web server for h with Parley's timeouts: a client
// gets 10 s to send its headers and 60 s for the whole request, and an
// idle keep-alive connection is closed after two minutes. There is no
// write timeout: WebSockets and exports stream, and set their own.
func NewHTTPServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 60 * time.Second,
		IdleTimeout: 120 * time.Second, MaxHeaderBytes: 64 << 10}
}

// NewQueueObserver returns the runner.QueueObserver that shows each waiting
// session's place in line on its page.
func NewQueueObserver(h *hub.Hub) queueObserver { return queueObserver{hub: h} }

type queueObserver struct{ hub *hub.Hub }

// QueueChanged implements runner.QueueObserver.
func (q queueObserver) QueueChanged(sessionID string, place, of int, failure string) {
	q.hub.Publish(sessionID, queueFrame(place, of, failure))
}

func queueFrame(place, of int, failure string) hub.Frame {
	var buf bytes.Buffer
	_ = views.SlotQueue(place, of, failure, true).Render(context.Background(), &buf)
	return hub.Frame{Data: buf.Bytes()}
}

// upgradeWS opens a WebSocket counted against the user's cap. Over the cap
// the socket is opened and closed at once with a reason the page shows
// (a browser cannot read the status of a refused handshake). ok is false
// when there is no socket to serve; release gives the count back.
func (s *Server) upgradeWS(w http.ResponseWriter, r *http.Request, userID int64) (conn *websocket.Conn, release func(), ok bool) {
	release, allowed := s.lim.ws.Acquire(strconv.FormatInt(userID, 10))
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		if allowed {
			release()
		}
		return nil, nil, false // the upgrader has answered the client
	}
	if !allowed {
		msg := fmt.Sprintf("Too many open Parley tabs (the limit is %d): close some, then reload this page.", s.lim.ws.Max())
		_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.ClosePolicyViolation, msg),
			time.Now().Add(writeWait))
		conn.Close()
		return nil, nil, false
	}
	return conn, release, true
}
