// Package gateway is Parley's model gateway: every claude run talks to the
// Messages API through it, with a token of its own, so the real API key never
// enters a run. The gateway checks the run's token, applies the per-project
// and per-user request limits, the session's model and spending limits
// (policy.go), forwards the request to the configured upstream with the
// real credentials, streams the response back unbuffered, and counts and
// prices each request's tokens, charging its session and project.
package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// maxRequestBytes bounds a forwarded request body.
const maxRequestBytes = 32 << 20

// DefaultUpstream is the Anthropic API, used when no upstream is configured.
const DefaultUpstream = "https://api.anthropic.com"

// Config is how the gateway reaches the model and what it allows.
type Config struct {
	Upstream string // base URL of the Messages API; "" = DefaultUpstream
	// APIKey is sent upstream as x-api-key; AuthToken as "Authorization:
	// Bearer" (the operator's ANTHROPIC_AUTH_TOKEN). Either, both or none.
	APIKey, AuthToken string
	ProjectRPM        int // model requests per minute per project; 0 = unlimited (serve's default is DefaultProjectRPM)
	UserRPM           int // model requests per minute per user who started the turn; 0 = unlimited
	MaxTokens         int // a request's max_tokens is lowered to this; 0 = DefaultMaxTokens
	// ServerTools lets requests carry the server tools that have the API
	// reach a host the request names (mcp_servers, web_fetch); off, they
	// are refused (servertools.go). web_search is allowed either way.
	ServerTools bool
}

// Usage is what one forwarded request cost.
type Usage struct {
	Requests, InputTokens, OutputTokens, Limited int64
	SessionID                                    string  // the run's session
	CostUSD                                      float64 // the priced usage, charged to the session and project
}

// UsageSink stores a project's usage and knows its rules: the gateway asks
// Rules before it forwards a Messages API request and calls AddUsage once
// the request is done.
type UsageSink interface {
	AddUsage(ctx context.Context, projectID int64, u Usage) error
	Rules(ctx context.Context, projectID int64, sessionID string) (Rules, error)
}

// Notifier tells a session's page that its model request was refused.
type Notifier interface {
	LimitReached(sessionID, text string)
}

// grant is what a run's token allows: model traffic on behalf of its
// project, and of the user whose turn is running.
type grant struct {
	projectID int64
	sessionID string
	user      func() string
	priming   bool // the gateway answers itself (Prime)
}

// Gateway is an http.Handler for the model API routes of the loopback listener.
type Gateway struct {
	cfg    Config
	sink   UsageSink
	notify Notifier
	log    *slog.Logger
	proxy  *httputil.ReverseProxy
	limits *limiter
	spends spends
	told   notices

	// leaseHeld, if set, is asked before model traffic flows (SetLeaseCheck);
	// waiting counts the requests and responses waiting for it.
	leaseHeld func() bool
	waiting   atomic.Int64

	mu     sync.Mutex
	grants map[string]grant
}

// New returns a Gateway; sink and notify may be nil.
func New(cfg Config, sink UsageSink, notify Notifier, log *slog.Logger) (*Gateway, error) {
	up, err := url.Parse(orDefault(cfg.Upstream, DefaultUpstream))
	if err != nil || (up.Scheme != "http" && up.Scheme != "https") || up.Host == "" {
		return nil, fmt.Errorf("model upstream %q is not an http(s) URL", cfg.Upstream)
	}
	g := &Gateway{cfg: cfg, sink: sink, notify: notify, log: log, grants: map[string]grant{},
		limits: newLimiter(time.Minute, time.Now)}
	g.proxy = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(up)
			pr.Out.Host = up.Host
			g.setCredentials(pr.Out.Header)
			// The usage is read from the response as it passes: a client's
			// Accept-Encoding (curl --compressed) would have the upstream
			// compress it out of reach and the request go uncharged.
			// Without it the transport asks for gzip and decompresses.
			pr.Out.Header.Del("Accept-Encoding")
		},
		// -1: flush after every write, so each SSE event reaches the CLI
		// as soon as the upstream sends it.
		FlushInterval:  -1,
		ModifyResponse: g.modifyResponse,
		ErrorLog:       slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
				writeError(w, http.StatusRequestEntityTooLarge, "request_too_large", "The request is larger than 32 MB.", false)
				return
			}
			if errors.Is(err, errRevoked) {
				writeError(w, http.StatusUnauthorized, "authentication_error", "unknown or ended run token", false)
				return
			}
			if r.Context().Err() != nil {
				return // the CLI went away: nobody to answer
			}
			g.log.Warn("model upstream failed", "err", err, "path", r.URL.Path)
			writeError(w, http.StatusBadGateway, "api_error", "Parley's model gateway could not reach the model API.", true)
		},
	}
	return g, nil
}

// Admit issues a token for one run's model traffic, valid until revoke is
// called. user names the member whose turn is running, for the per-user limit.
func (g *Gateway) Admit(projectID int64, sessionID string, user func() string) (token string, revoke func()) {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand crashes the program instead)
	token = "parley-run-" + base64.RawURLEncoding.EncodeToString(b)
	g.mu.Lock()
	g.grants[token] = grant{projectID: projectID, sessionID: sessionID, user: user}
	g.mu.Unlock()
	return token, func() {
		g.mu.Lock()
		delete(g.grants, token)
		g.mu.Unlock()
	}
}

// ServeHTTP checks the run's token and limits and forwards the request;
// while the replica's lease is in doubt it waits first (SetLeaseCheck).
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !forwarded(r) {
		writeError(w, http.StatusNotFound, "not_found_error",
			"Parley's model gateway forwards only the Messages API (POST /v1/messages and /v1/messages/count_tokens)", false)
		return
	}
	token := runToken(r.Header)
	gr, ok := g.lookup(token)
	if ok && gr.priming {
		answerPrime(w, r) // nothing leaves Parley (prime.go)
		return
	}
	if ok && !g.leaseHeldNow() {
		g.log.Warn("a model request waits: this replica's lease is not surely held", "session_id", gr.sessionID)
		// Read the body first: only then does the server notice a CLI that
		// goes away (its run fenced and ended, say) and end r's context.
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBytes))
		if err == nil && !g.waitLease(r.Context()) {
			err = r.Context().Err()
		}
		if err != nil {
			if _, big := errors.AsType[*http.MaxBytesError](err); !big && r.Context().Err() == nil {
				err = fmt.Errorf("read the request: %w", err) // a malformed body: answered 502
			}
			g.proxy.ErrorHandler(w, r, err)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		_, ok = g.lookup(token) // a fenced run's token is revoked
	}
	if !ok {
		writeError(w, http.StatusUnauthorized, "authentication_error", "unknown or ended run token", false)
		return
	}
	if msg := g.admitRequest(gr); msg != "" {
		g.refuse(w, gr, msg)
		return
	}
	var rq request
	if r.Method == http.MethodPost {
		// The Messages API takes up to 32 MB a request; nothing larger is forwarded.
		var release func()
		var ok bool
		if r, rq, release, ok = g.police(w, r, gr); !ok {
			return
		}
		defer release() // once the response is done and charged
	}
	r = r.WithContext(context.WithValue(r.Context(), grantKey{}, granted{grant: gr, token: token, rq: rq}))
	g.proxy.ServeHTTP(w, r)
}

// SetMaxTokens sets the cap on a request's max_tokens (Config.MaxTokens;
// 0 = DefaultMaxTokens). Set it before runs start.
func (g *Gateway) SetMaxTokens(n int) { g.cfg.MaxTokens = n }

// maxTokens is the cap on a request's max_tokens.
func (g *Gateway) maxTokens() int64 {
	if g.cfg.MaxTokens > 0 {
		return int64(g.cfg.MaxTokens)
	}
	return DefaultMaxTokens
}

// forwarded says whether r is model traffic the gateway passes upstream:
// the Messages API, and the CLI's connectivity probe. A run's token is
// worth the real key upstream, so nothing else the key could reach (files,
// batches, an organisation's admin API) is reachable through it.
func forwarded(r *http.Request) bool {
	switch r.URL.Path {
	case "/v1/messages", "/v1/messages/count_tokens":
		return r.Method == http.MethodPost
	case "/api/hello":
		return r.Method == http.MethodHead || r.Method == http.MethodGet
	}
	return false
}

// lookup returns what token allows, if it is a live run's.
func (g *Gateway) lookup(token string) (grant, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	gr, ok := g.grants[token]
	return gr, ok
}

// SetLeaseCheck sets what model traffic asks before it flows: whether this
// replica surely still holds its lease (package cluster). While it does
// not, a model request waits before it goes upstream, and a response waits
// before it passes more on to the CLI: a replica cut off from Postgres (or
// paused) past its lease may have had its sessions taken over by another
// replica, whose claude now works in the same workspace and transcript, so
// this replica's claude gets nothing more from the model until the
// heartbeat renews the lease, or fences the run (which revokes its token:
// the request is then refused and the response cut). Set it before runs
// start.
func (g *Gateway) SetLeaseCheck(held func() bool) { g.leaseHeld = held }

// SetNotifier makes n the one told when a session reaches a limit (the
// runs' supervisor, made after the gateway it starts runs with). Call it
// before the gateway serves.
func (g *Gateway) SetNotifier(n Notifier) { g.notify = n }

// leaseWait is how often model traffic waiting for the lease looks again.
const leaseWait = 50 * time.Millisecond

func (g *Gateway) leaseHeldNow() bool { return g.leaseHeld == nil || g.leaseHeld() }

// waitLease waits until the lease is surely held; false if ctx ended
// first (or had ended: a request whose CLI went away never goes).
func (g *Gateway) waitLease(ctx context.Context) bool {
	if g.leaseHeldNow() {
		return true
	}
	g.waiting.Add(1)
	defer g.waiting.Add(-1)
	t := time.NewTicker(leaseWait)
	defer t.Stop()
	for !g.leaseHeldNow() {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
	return ctx.Err() == nil
}

// Waiting is how many model requests and responses wait for the lease now.
func (g *Gateway) Waiting() int { return int(g.waiting.Load()) }

// modifyResponse has the response (its status and headers too) flow only
// while the lease is held and the run's token valid, and counts its usage.
func (g *Gateway) modifyResponse(resp *http.Response) error {
	gr, ok := resp.Request.Context().Value(grantKey{}).(granted)
	if !ok {
		return nil
	}
	if err := g.flowing(resp.Request.Context(), gr.token); err != nil {
		return err
	}
	resp.Body = &leaseReader{rc: resp.Body, g: g, ctx: resp.Request.Context(), token: gr.token}
	return g.countUsage(resp, gr)
}

// errRevoked refuses or cuts model traffic whose run's token was revoked
// meanwhile (the run ended, or was fenced while it waited for the lease).
var errRevoked = errors.New("the run's model token was revoked")

// flowing waits until the lease is held, then says whether token is still
// a live run's: nil, errRevoked, or ctx's error.
func (g *Gateway) flowing(ctx context.Context, token string) error {
	if !g.waitLease(ctx) {
		return ctx.Err()
	}
	if _, ok := g.lookup(token); !ok {
		return errRevoked
	}
	return nil
}

// leaseReader passes a response on only while the replica's lease is
// surely held (SetLeaseCheck) and the run's token is valid: what it read
// while the lease was in doubt waits, and a revoked token cuts it.
type leaseReader struct {
	rc    io.ReadCloser
	g     *Gateway
	ctx   context.Context
	token string
}

func (r *leaseReader) Read(p []byte) (int, error) {
	n, err := r.rc.Read(p)
	if ferr := r.g.flowing(r.ctx, r.token); ferr != nil {
		return 0, ferr
	}
	return n, err
}

func (r *leaseReader) Close() error { return r.rc.Close() }

// admitRequest counts the request against the project's and the user's
// limits; it returns why it is refused, or "".
func (g *Gateway) admitRequest(gr grant) string {
	user := ""
	if gr.user != nil {
		user = gr.user()
	}
	keys := []limitKey{}
	if g.cfg.ProjectRPM > 0 {
		keys = append(keys, limitKey{key: fmt.Sprint("project:", gr.projectID), max: g.cfg.ProjectRPM,
			msg: fmt.Sprintf("This project has reached its limit of %d model requests a minute. Wait a minute and send your message again.", g.cfg.ProjectRPM)})
	}
	if g.cfg.UserRPM > 0 && user != "" {
		keys = append(keys, limitKey{key: "user:" + user, max: g.cfg.UserRPM,
			msg: fmt.Sprintf("%s has reached the limit of %d model requests a minute. Wait a minute and send the message again.", user, g.cfg.UserRPM)})
	}
	return g.limits.take(keys)
}

// setCredentials replaces whatever credentials the run sent with the real ones.
func (g *Gateway) setCredentials(h http.Header) {
	h.Del("X-Api-Key")
	h.Del("Authorization")
	if g.cfg.APIKey != "" {
		h.Set("X-Api-Key", g.cfg.APIKey)
	}
	if g.cfg.AuthToken != "" {
		h.Set("Authorization", "Bearer "+g.cfg.AuthToken)
	}
}

// runToken is the token the CLI sends: ANTHROPIC_API_KEY as x-api-key, or
// ANTHROPIC_AUTH_TOKEN as a bearer token.
func runToken(h http.Header) string {
	if k := h.Get("X-Api-Key"); k != "" {
		return k
	}
	scheme, token, ok := strings.Cut(h.Get("Authorization"), " ")
	if ok && strings.EqualFold(scheme, "Bearer") {
		return strings.TrimSpace(token)
	}
	return ""
}

// grantKey is the context key of a forwarded request's granted.
type grantKey struct{}

type granted struct {
	grant
	token string
	rq    request // what police read of the request
}

// record hands one request's usage to the sink, bounded in time.
func (g *Gateway) record(projectID int64, u Usage) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := g.sink.AddUsage(ctx, projectID, u); err != nil {
		g.log.Warn("record model usage", "project_id", projectID, "err", err)
	}
}

// writeError answers in the Messages API's error format, which the CLI shows.
func writeError(w http.ResponseWriter, status int, typ, msg string, retry bool) {
	w.Header().Set("Content-Type", "application/json")
	if !retry {
		w.Header().Set("x-should-retry", "false")
	}
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"type":"error","error":{"type":%q,"message":%q}}`, typ, msg)
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// NotifyFunc is a Notifier made of a function.
type NotifyFunc func(sessionID, text string)

// LimitReached calls f.
func (f NotifyFunc) LimitReached(sessionID, text string) { f(sessionID, text) }
