package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// DefaultMaxTokens caps a request's max_tokens when Config.MaxTokens is 0.
const DefaultMaxTokens = 32000

// DefaultProjectRPM is the model requests a minute a project may make
// unless the operator sets another limit (PARLEY_PROJECT_RPM).
const DefaultProjectRPM = 120

// Rules are what a run's session may use and spend now, as the sink
// knows them (UsageSink.Rules).
type Rules struct {
	// Model is the session's pinned model, "" for none (see ModelAllowed).
	Model string
	// SessionLeftUSD and ProjectLeftUSD are what the session may still
	// spend over its life and its project today; negative = no limit.
	SessionLeftUSD, ProjectLeftUSD float64
	// Reached, if set, is the sentence that says which spending limit is
	// reached: every model request is refused with it.
	Reached string
}

// request is the part of a Messages API request body the gateway rules on.
type request struct {
	model     string
	maxTokens int64 // after the cap
	searches  int64 // web searches its server tools may make (max_uses)
	body      []byte
}

// inspect reads a request body, re-encodes it and lowers max_tokens to the
// cap. Lowered rather than refused: the pinned CLI asks for the model's
// largest output (measured: max_tokens 128000 for claude-opus-5-5, 32000
// for claude-sonnet-4-5), so a refusal would end every turn of a well-
// behaved CLI; a lowered request still works (it may stop at max_tokens)
// and its worst-case cost is bounded. The body is decoded into its
// top-level keys and encoded again so that what goes upstream is exactly
// what was checked: a second "model" key, which another JSON parser might
// read instead of the first, does not survive.
//
// Server tools that reach a host of the request's choosing are refused
// unless allowEgress (see serverTools): the error is then an
// *egressError.
func inspect(raw []byte, maxTokens int64, allowEgress bool) (request, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return request{}, fmt.Errorf("the request body is not a JSON object")
	}
	var rq request
	if m, ok := obj["model"]; ok {
		if err := json.Unmarshal(m, &rq.model); err != nil {
			return request{}, fmt.Errorf("the request's model is not a string")
		}
	}
	rq.maxTokens = maxTokens
	if m, ok := obj["max_tokens"]; ok {
		n, err := strconv.ParseFloat(string(m), 64)
		if err != nil {
			return request{}, fmt.Errorf("the request's max_tokens is not a number")
		}
		if n < float64(maxTokens) {
			rq.maxTokens = max(int64(n), 0)
		} else {
			obj["max_tokens"] = json.RawMessage(strconv.FormatInt(maxTokens, 10))
			capThinking(obj, maxTokens)
		}
	}
	searches, refused := serverTools(obj, allowEgress)
	if refused != "" {
		return request{}, &egressError{refused}
	}
	rq.searches = searches
	body, err := json.Marshal(obj)
	if err != nil {
		return request{}, fmt.Errorf("encode the request: %w", err)
	}
	rq.body = body
	return rq, nil
}

// capThinking keeps an extended-thinking budget below a lowered
// max_tokens, as the API requires ("budget_tokens must be less than
// max_tokens"): the CLI sends budget_tokens = max_tokens - 1.
func capThinking(obj map[string]json.RawMessage, maxTokens int64) {
	var th map[string]json.RawMessage
	if json.Unmarshal(obj["thinking"], &th) != nil || th == nil {
		return
	}
	b, err := strconv.ParseFloat(string(th["budget_tokens"]), 64)
	if err != nil || int64(b) < maxTokens {
		return
	}
	th["budget_tokens"] = json.RawMessage(strconv.FormatInt(maxTokens-1, 10))
	if enc, err := json.Marshal(th); err == nil {
		obj["thinking"] = enc
	}
}

// egressError is a request refused for a server tool that would have the
// API reach a host of its choosing.
type egressError struct{ msg string }

func (e *egressError) Error() string { return e.msg }

// estimate is what rq may cost at most, roughly: its body as input tokens
// (about four bytes a token), max_tokens of output at the model's rate,
// and every web search its server tools may make.
func (rq request) estimate() float64 {
	return rateOf(rq.model).cost(tokens{input: int64(len(rq.body) / 4), output: rq.maxTokens, webSearches: rq.searches})
}

// police applies the model rule, max_tokens cap and spending limits to a
// Messages API request. It answers a refusal itself and returns ok=false;
// else it returns the request to forward and the release of its spending
// reservation, to call once the response is done.
func (g *Gateway) police(w http.ResponseWriter, r *http.Request, gr grant) (_ *http.Request, _ request, release func(), ok bool) {
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBytes))
	if err != nil {
		g.proxy.ErrorHandler(w, r, err)
		return nil, request{}, nil, false
	}
	rq, err := inspect(raw, g.maxTokens(), g.cfg.ServerTools)
	if e, ok := errors.AsType[*egressError](err); ok {
		writeError(w, http.StatusForbidden, "permission_error", e.msg, false)
		return nil, request{}, nil, false
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", err.Error()+".", false)
		return nil, request{}, nil, false
	}
	release = func() {}
	if g.sink != nil {
		rules, err := g.sink.Rules(r.Context(), gr.projectID, gr.sessionID)
		if err != nil {
			g.log.Warn("read a run's model rules", "session_id", gr.sessionID, "err", err)
			writeError(w, http.StatusServiceUnavailable, "api_error", "Parley could not check this session's limits; try again in a moment.", true)
			return nil, request{}, nil, false
		}
		if !ModelAllowed(rules.Model, rq.model) {
			writeError(w, http.StatusForbidden, "permission_error", fmt.Sprintf(
				"Model %q is not allowed in this session; it may use %s. An owner can change the project's model in its settings.",
				rq.model, AllowedModels(rules.Model)), false)
			return nil, request{}, nil, false
		}
		msg := rules.Reached
		// count_tokens is free: it needs no share of what is left.
		if msg == "" && r.URL.Path == "/v1/messages" {
			release, msg = g.spends.reserve(gr, rules, rq.estimate())
		}
		if msg != "" {
			g.refuse(w, gr, msg)
			return nil, request{}, nil, false
		}
	}
	r = r.Clone(r.Context())
	r.Body = io.NopCloser(bytes.NewReader(rq.body))
	r.ContentLength = int64(len(rq.body))
	r.TransferEncoding = nil
	r.Header.Del("Content-Length")
	return r, rq, release, true
}

// refuse answers 429 with msg and tells the session's page, once a
// minute for the same msg (see told).
func (g *Gateway) refuse(w http.ResponseWriter, gr grant, msg string) {
	if g.sink != nil {
		g.record(gr.projectID, Usage{Limited: 1, SessionID: gr.sessionID})
	}
	if g.notify != nil && g.told.first(gr.sessionID+"\x00"+msg, g.limits.now()) {
		g.notify.LimitReached(gr.sessionID, msg)
	}
	// x-should-retry: false — the Anthropic SDKs honour it and give up
	// at once instead of retrying a limit that will not lift in seconds.
	writeError(w, http.StatusTooManyRequests, "rate_limit_error", msg, false)
}

// noticeEvery is how often a session's page is told the same refusal: a
// loop of curls is refused every time, but its page shows one notice a
// minute, not one a request.
const noticeEvery = time.Minute

// notices remembers when each session was last told each refusal.
type notices struct {
	mu   sync.Mutex
	last map[string]time.Time
}

// first reports whether key was not told within noticeEvery of now, and
// notes it told; entries older than that are dropped.
func (n *notices) first(key string, now time.Time) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.last == nil {
		n.last = map[string]time.Time{}
	}
	if t, ok := n.last[key]; ok && now.Sub(t) < noticeEvery {
		return false
	}
	for k, t := range n.last {
		if now.Sub(t) >= noticeEvery {
			delete(n.last, k)
		}
	}
	n.last[key] = now
	return true
}
