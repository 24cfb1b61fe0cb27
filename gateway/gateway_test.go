package gateway

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// sink keeps usage per project and, as the server does, spending per
// session against rules set per session (rules, spent).
type sink struct {
	mu    sync.Mutex
	u     map[int64]Usage
	ch    chan struct{}
	rules map[string]Rules   // per session; none = no rules
	limit map[string]float64 // per session: its spending limit in USD
	spent map[string]float64 // per session: what the gateway charged
}

func (s *sink) AddUsage(_ context.Context, id int64, u Usage) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.u[id]
	t.Requests += u.Requests
	t.InputTokens += u.InputTokens
	t.OutputTokens += u.OutputTokens
	t.Limited += u.Limited
	t.CostUSD += u.CostUSD
	s.u[id] = t
	if s.spent == nil {
		s.spent = map[string]float64{}
	}
	s.spent[u.SessionID] += u.CostUSD
	select {
	case s.ch <- struct{}{}:
	default:
	}
	return nil
}

func (s *sink) Rules(_ context.Context, _ int64, sessionID string) (Rules, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.rules[sessionID]
	if !ok {
		r = Rules{SessionLeftUSD: -1, ProjectLeftUSD: -1}
	}
	if l, ok := s.limit[sessionID]; ok {
		r.SessionLeftUSD = max(l-s.spent[sessionID], 0)
		if s.spent[sessionID] >= l {
			r.Reached = fmt.Sprintf("This session has spent $%.2f, its limit is $%.2f.", s.spent[sessionID], l)
		}
	}
	return r, nil
}

func (s *sink) get(id int64) Usage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.u[id]
}

// upstream is a Messages API stand-in: it records the credentials it got
// and streams two events, the second only once release is closed.
func upstream(t *testing.T, release chan struct{}) (*httptest.Server, *http.Header) {
	var got http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":12,\"cache_read_input_tokens\":3,\"output_tokens\":1}}}\n\n")
		w.(http.Flusher).Flush()
		<-release
		io.WriteString(w, "event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":7}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv, &got
}

func TestGatewayForwardsWithTheRealKeyAndStreams(t *testing.T) {
	release := make(chan struct{})
	up, got := upstream(t, release)
	s := &sink{u: map[int64]Usage{}, ch: make(chan struct{}, 1)}
	g, err := New(Config{Upstream: up.URL, APIKey: "real-key"}, s, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(g)
	defer front.Close()
	token, revoke := g.Admit(4, "sess", nil)

	req, _ := http.NewRequest("POST", front.URL+"/v1/messages", strings.NewReader(`{}`))
	req.Header.Set("X-Api-Key", token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	// The first event arrives while the upstream still holds the second:
	// the gateway does not buffer the stream.
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n')
	if err != nil || line != "event: message_start\n" {
		t.Fatalf("first line = %q, %v", line, err)
	}
	close(release)
	rest, _ := io.ReadAll(br)
	resp.Body.Close()
	if !strings.Contains(string(rest), "message_stop") {
		t.Errorf("the stream's end did not arrive: %q", rest)
	}
	if k := got.Get("X-Api-Key"); k != "real-key" {
		t.Errorf("upstream x-api-key = %q, want the real key", k)
	}
	if a := got.Get("Authorization"); a != "" {
		t.Errorf("upstream Authorization = %q, want none", a)
	}
	select {
	case <-s.ch:
	case <-time.After(10 * time.Second):
		t.Fatal("usage was not recorded")
	}
	// No model in the request: priced at the most expensive rate, $15 and
	// $75 a million; the cache read at a tenth.
	want := Usage{Requests: 1, InputTokens: 15, OutputTokens: 7, CostUSD: (12*15 + 3*1.5 + 7*75) / 1e6}
	if u := s.get(4); u.Requests != want.Requests || u.InputTokens != want.InputTokens || u.OutputTokens != want.OutputTokens ||
		math.Abs(u.CostUSD-want.CostUSD) > 1e-12 {
		t.Errorf("usage = %+v, want %+v", u, want)
	}

	// Once the run has ended its token is worthless.
	revoke()
	req, _ = http.NewRequest("POST", front.URL+"/v1/messages", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("revoked token: status %d, want 401", resp.StatusCode)
	}
}

func TestGatewayAuthToken(t *testing.T) {
	release := make(chan struct{})
	close(release)
	up, got := upstream(t, release)
	g, _ := New(Config{Upstream: up.URL, AuthToken: "oauth-token"}, nil, nil, slog.New(slog.DiscardHandler))
	front := httptest.NewServer(g)
	defer front.Close()
	token, _ := g.Admit(1, "s", nil)
	req, _ := http.NewRequest("POST", front.URL+"/v1/messages", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if a, k := got.Get("Authorization"), got.Get("X-Api-Key"); a != "Bearer oauth-token" || k != "" {
		t.Errorf("upstream got Authorization %q, x-api-key %q; want the operator's token only", a, k)
	}
}

func TestGatewayLimits(t *testing.T) {
	release := make(chan struct{})
	close(release)
	up, _ := upstream(t, release)
	s := &sink{u: map[int64]Usage{}, ch: make(chan struct{}, 16)}
	var notices []string
	var mu sync.Mutex
	g, _ := New(Config{Upstream: up.URL, ProjectRPM: 3, UserRPM: 2}, s, NotifyFunc(func(id, text string) {
		mu.Lock()
		notices = append(notices, id+": "+text)
		mu.Unlock()
	}), slog.New(slog.DiscardHandler))
	now := time.Unix(1000, 0)
	g.limits.now = func() time.Time { return now }
	front := httptest.NewServer(g)
	defer front.Close()
	user := "ann"
	a, _ := g.Admit(1, "sa", func() string { return user })
	b, _ := g.Admit(1, "sb", func() string { return "bob" })
	other, _ := g.Admit(2, "sc", func() string { return "bob" })
	call := func(token string) int {
		req, _ := http.NewRequest("POST", front.URL+"/v1/messages", strings.NewReader(`{}`))
		req.Header.Set("X-Api-Key", token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 429 && resp.Header.Get("x-should-retry") != "false" {
			t.Error("a refused request lacks x-should-retry: false")
		}
		return resp.StatusCode
	}
	steps := []struct {
		token string
		want  int
	}{
		{a, 200}, {a, 200},
		{a, 429},     // ann's 2 a minute
		{b, 200},     // project 1's third
		{b, 429},     // project 1's 3 a minute
		{other, 200}, // project 2 is not project 1
	}
	for i, st := range steps {
		if got := call(st.token); got != st.want {
			t.Errorf("request %d: status %d, want %d", i, got, st.want)
		}
	}
	now = now.Add(time.Minute)
	if got := call(a); got != 200 {
		t.Errorf("a minute later: status %d, want 200", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(notices) != 2 || !strings.HasPrefix(notices[0], "sa: ann has reached the limit of 2") ||
		!strings.HasPrefix(notices[1], "sb: This project has reached its limit of 3") {
		t.Errorf("notices = %q", notices)
	}
}

// TestGatewayForwardsOnlyTheMessagesAPI: a run's token reaches the model,
// not whatever else the real key could (files, batches, the admin API).
func TestGatewayForwardsOnlyTheMessagesAPI(t *testing.T) {
	var paths []string
	var mu sync.Mutex
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.Method+" "+r.URL.Path)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"input_tokens":1}`)
	}))
	defer up.Close()
	g, _ := New(Config{Upstream: up.URL}, nil, nil, slog.New(slog.DiscardHandler))
	front := httptest.NewServer(g)
	defer front.Close()
	token, _ := g.Admit(1, "s", nil)
	for _, tc := range []struct {
		method, path string
		want         int
	}{
		{"POST", "/v1/messages/count_tokens?beta=true", http.StatusOK},
		{"HEAD", "/api/hello", http.StatusOK},
		{"GET", "/v1/files", http.StatusNotFound},
		{"POST", "/v1/messages/batches", http.StatusNotFound},
		{"GET", "/v1/organizations/api_keys", http.StatusNotFound},
		{"GET", "/v1/messages", http.StatusNotFound},
		{"POST", "/v1/messages/../files", http.StatusNotFound},
	} {
		req, _ := http.NewRequest(tc.method, front.URL+tc.path, strings.NewReader("{}"))
		req.Header.Set("X-Api-Key", token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s %s: status %d, want %d", tc.method, tc.path, resp.StatusCode, tc.want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(paths, ",") != "POST /v1/messages/count_tokens,HEAD /api/hello" {
		t.Errorf("upstream got %q, want only the Messages API's count_tokens and the probe", paths)
	}
}

func TestGatewayRefusesOversizedRequests(t *testing.T) {
	release := make(chan struct{})
	close(release)
	up, _ := upstream(t, release)
	g, _ := New(Config{Upstream: up.URL}, nil, nil, slog.New(slog.DiscardHandler))
	front := httptest.NewServer(g)
	defer front.Close()
	token, _ := g.Admit(1, "s", nil)
	req, _ := http.NewRequest("POST", front.URL+"/v1/messages", strings.NewReader(strings.Repeat("x", maxRequestBytes+1)))
	req.Header.Set("X-Api-Key", token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("status %d, want 413", resp.StatusCode)
	}
}

// TestGatewayWaitsForTheLease: while the replica's lease is not surely
// held, a request waits before it goes upstream and a response before it
// passes more on (its status too); a token revoked meanwhile (a fenced
// run) is refused, and its response cut.
func TestGatewayWaitsForTheLease(t *testing.T) {
	var requests atomic.Int64
	releases := make(chan chan struct{}, 4)
	started := make(chan struct{}, 4)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		var release chan struct{}
		select {
		case release = <-releases:
		case <-r.Context().Done():
			return
		}
		started <- struct{}{}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: message_start\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, "event: message_stop\n")
	}))
	defer up.Close()
	g, _ := New(Config{Upstream: up.URL}, nil, nil, slog.New(slog.DiscardHandler))
	var held atomic.Bool
	g.SetLeaseCheck(held.Load)
	front := httptest.NewServer(g)
	defer front.Close()
	type result struct {
		resp *http.Response
		err  error
	}
	send := func(ctx context.Context, token string) chan result {
		ch := make(chan result, 1)
		req, _ := http.NewRequestWithContext(ctx, "POST", front.URL+"/v1/messages", strings.NewReader(`{}`))
		req.Header.Set("X-Api-Key", token)
		go func() { resp, err := http.DefaultClient.Do(req); ch <- result{resp, err} }()
		return ch
	}
	get := func(what string, ch <-chan result) result {
		t.Helper()
		select {
		case r := <-ch:
			return r
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: nothing after 10 s", what)
			return result{}
		}
	}
	// waiting waits until n requests or responses wait for the lease.
	waiting := func(what string, n int) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); g.Waiting() != n; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d waiting for the lease, want %d", what, g.Waiting(), n)
			}
		}
	}
	// nothingYet fails if ch has yielded.
	nothingYet := func(what string, ch <-chan result) {
		t.Helper()
		select {
		case r := <-ch:
			t.Fatalf("%s while the lease was in doubt: %+v", what, r)
		case <-time.After(100 * time.Millisecond):
		}
	}
	readLine := func(br *bufio.Reader) chan result {
		ch := make(chan result, 1)
		go func() {
			line, err := br.ReadString('\n')
			if err == nil && line != "event: message_stop\n" {
				err = fmt.Errorf("line %q", line)
			}
			ch <- result{err: err}
		}()
		return ch
	}

	// A request waits, then goes once the lease is held again.
	token, revoke := g.Admit(1, "s", nil)
	release := make(chan struct{})
	releases <- release
	ch := send(t.Context(), token)
	waiting("a request", 1)
	nothingYet("a response came", ch)
	if n := requests.Load(); n != 0 {
		t.Fatalf("%d requests reached the model while the lease was in doubt", n)
	}
	held.Store(true)
	r := get("the request once held", ch)
	if r.err != nil || r.resp.StatusCode != 200 {
		t.Fatalf("once held: %+v", r)
	}
	br := bufio.NewReader(r.resp.Body)
	if line, err := br.ReadString('\n'); err != nil || line != "event: message_start\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	// The lease in doubt again: the rest of the stream waits for it.
	held.Store(false)
	close(release)
	rest := readLine(br)
	waiting("the stream", 1)
	nothingYet("the stream went on", rest)
	held.Store(true)
	if r := get("the rest of the stream", rest); r.err != nil {
		t.Fatalf("the rest once held: %v", r.err)
	}
	r.resp.Body.Close()

	// A response whose lease goes in doubt before its status passes waits
	// with its status too.
	release = make(chan struct{})
	releases <- release
	held.Store(false)
	ch = send(t.Context(), token)
	waiting("a request", 1)
	held.Store(true)
	<-started
	held.Store(false) // may come before or after the proxy has the status: either way it waits
	waiting("the response", 1)
	nothingYet("the response's status came", ch)
	held.Store(true)
	close(release)
	if r := get("the response once held", ch); r.err != nil || r.resp.StatusCode != 200 {
		t.Fatalf("the response once held: %+v", r)
	} else {
		io.Copy(io.Discard, r.resp.Body)
		r.resp.Body.Close()
	}

	// A stream in flight when its run is fenced is cut.
	release = make(chan struct{})
	releases <- release
	r = get("the next request", send(t.Context(), token))
	if r.err != nil || r.resp.StatusCode != 200 {
		t.Fatalf("the next request: %+v", r)
	}
	br = bufio.NewReader(r.resp.Body)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	held.Store(false)
	close(release)
	rest = readLine(br)
	waiting("the stream", 1)
	revoke()
	held.Store(true)
	if r := get("the cut stream", rest); r.err == nil {
		t.Error("a fenced run's stream went on")
	}
	r.resp.Body.Close()

	// A request that waited while its run was fenced is refused.
	held.Store(false)
	token, revoke = g.Admit(1, "s", nil)
	ch = send(t.Context(), token)
	waiting("a request", 1)
	revoke()
	held.Store(true)
	if r := get("the fenced request", ch); r.err != nil || r.resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a fenced run's request: %+v, want 401", r)
	}
	// A request given up while it waited never goes.
	held.Store(false)
	token, _ = g.Admit(1, "s", nil)
	ctx, cancel := context.WithCancel(t.Context())
	ch = send(ctx, token)
	waiting("a request", 1)
	cancel()
	if r := get("the cancelled request", ch); r.err == nil {
		t.Errorf("a cancelled request got %d", r.resp.StatusCode)
	}
	waiting("nothing", 0)
	held.Store(true)
	if n := requests.Load(); n != 3 {
		t.Errorf("the model got %d requests, want 3", n)
	}
}
