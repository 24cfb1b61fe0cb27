package gateway

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder is a Messages API stand-in that keeps every request body and
// answers with a stream reporting usage (input and output tokens), after
// hold is closed if set.
type recorder struct {
	mu     sync.Mutex
	bodies []map[string]any
	usage  string
	hold   chan struct{}
	srv    *httptest.Server
}

func newRecorder(t *testing.T, usage string) *recorder {
	rec := &recorder{usage: usage}
	rec.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &body); err != nil {
			t.Errorf("the gateway forwarded a body that is not JSON: %q", b)
		}
		rec.mu.Lock()
		rec.bodies = append(rec.bodies, body)
		hold := rec.hold
		rec.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":"+rec.usage+"}}\n\n")
		w.(http.Flusher).Flush()
		if hold != nil {
			<-hold
		}
		io.WriteString(w, "event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":1000}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	}))
	t.Cleanup(rec.srv.Close)
	return rec
}

func (rec *recorder) got() []map[string]any {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]map[string]any(nil), rec.bodies...)
}

// post sends body to the gateway with token; it returns the status and body.
func post(t *testing.T, url, token, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", url+"/v1/messages", strings.NewReader(body))
	req.Header.Set("X-Api-Key", token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func msg(model string, maxTokens int) string {
	return fmt.Sprintf(`{"model":%q,"max_tokens":%d,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, model, maxTokens)
}

// TestGatewayRefusesModelsOutsideThePin: a session pinned to a model may
// ask for it (or a dated snapshot) and the Haiku side model, nothing else;
// the refusal is a 403 naming what is allowed, and nothing goes upstream.
// A body with two "model" keys goes upstream with the one checked only.
func TestGatewayRefusesModelsOutsideThePin(t *testing.T) {
	up := newRecorder(t, `{"input_tokens":10}`)
	s := &sink{u: map[int64]Usage{}, ch: make(chan struct{}, 16), rules: map[string]Rules{
		"pinned": {Model: "claude-sonnet-4-5", SessionLeftUSD: -1, ProjectLeftUSD: -1}}}
	g, _ := New(Config{Upstream: up.srv.URL}, s, nil, slog.New(slog.DiscardHandler))
	front := httptest.NewServer(g)
	defer front.Close()
	pinned, _ := g.Admit(1, "pinned", nil)
	free, _ := g.Admit(1, "free", nil)
	for _, tc := range []struct {
		token, body string
		want        int
	}{
		{pinned, msg("claude-opus-4-1", 100), http.StatusForbidden},
		{pinned, msg("claude-sonnet-4-5-1", 100), http.StatusForbidden},
		{pinned, `{"max_tokens":100}`, http.StatusForbidden},
		{pinned, `{"model":"claude-sonnet-4-5","model":"claude-opus-4-1","max_tokens":100}`, http.StatusForbidden},
		{pinned, `not json`, http.StatusBadRequest},
		{pinned, msg("claude-sonnet-4-5", 100), http.StatusOK},
		{pinned, msg("claude-sonnet-4-5-20250929", 100), http.StatusOK},
		{pinned, msg("claude-haiku-4-5", 100), http.StatusOK},
		{pinned, `{"model":"claude-opus-4-1","model":"claude-sonnet-4-5","max_tokens":100}`, http.StatusOK},
		{free, msg("claude-opus-4-1", 100), http.StatusOK},
	} {
		status, body := post(t, front.URL, tc.token, tc.body)
		if status != tc.want {
			t.Errorf("%s: status %d, want %d (%s)", tc.body, status, tc.want, body)
		}
		if status == http.StatusForbidden && !strings.Contains(body, "it may use claude-sonnet-4-5 and the Haiku models") {
			t.Errorf("%s: the refusal does not name the allowed models: %s", tc.body, body)
		}
	}
	var models []string
	for _, b := range up.got() {
		models = append(models, fmt.Sprint(b["model"]))
	}
	if got, want := strings.Join(models, ","), "claude-sonnet-4-5,claude-sonnet-4-5-20250929,claude-haiku-4-5,claude-sonnet-4-5,claude-opus-4-1"; got != want {
		t.Errorf("upstream got models %s, want %s", got, want)
	}
}

// TestGatewayCapsMaxTokens: a request above the cap goes upstream with
// max_tokens lowered to it (and an extended-thinking budget below it).
func TestGatewayCapsMaxTokens(t *testing.T) {
	up := newRecorder(t, `{"input_tokens":10}`)
	g, _ := New(Config{Upstream: up.srv.URL}, nil, nil, slog.New(slog.DiscardHandler))
	front := httptest.NewServer(g)
	defer front.Close()
	token, _ := g.Admit(1, "s", nil)
	post(t, front.URL, token, msg("claude-opus-4-1", 64000))
	post(t, front.URL, token, `{"model":"claude-sonnet-4-5","max_tokens":128000,"thinking":{"type":"enabled","budget_tokens":127999}}`)
	post(t, front.URL, token, msg("claude-opus-4-1", 1000))
	g.SetMaxTokens(500)
	post(t, front.URL, token, msg("claude-opus-4-1", 1000))
	got := up.got()
	if len(got) != 4 {
		t.Fatalf("upstream got %d requests, want 4", len(got))
	}
	for i, want := range []float64{32000, 32000, 1000, 500} {
		if n := got[i]["max_tokens"]; n != want {
			t.Errorf("request %d: upstream max_tokens %v, want %v", i, n, want)
		}
	}
	if th := got[1]["thinking"].(map[string]any); th["budget_tokens"] != float64(31999) {
		t.Errorf("thinking budget %v, want 31999", th["budget_tokens"])
	}
}

// TestGatewayChargesAndEnforcesSpending: each response's usage is priced
// by its model and charged to the session; once the session is over its
// limit the next request gets 429 with the reason, its page is told, and
// nothing goes upstream; the page is told once, not at every refusal.
// Requests sent at once under a small limit go one
// at a time: the second waits (429) while the first is under way.
func TestGatewayChargesAndEnforcesSpending(t *testing.T) {
	up := newRecorder(t, `{"input_tokens":1000,"cache_creation_input_tokens":100,"cache_read_input_tokens":1000}`)
	s := &sink{u: map[int64]Usage{}, ch: make(chan struct{}, 16), limit: map[string]float64{"s": 0.01}}
	var notices []string
	var mu sync.Mutex
	g, _ := New(Config{Upstream: up.srv.URL}, s, NotifyFunc(func(id, text string) {
		mu.Lock()
		notices = append(notices, id+": "+text)
		mu.Unlock()
	}), slog.New(slog.DiscardHandler))
	front := httptest.NewServer(g)
	defer front.Close()
	token, _ := g.Admit(7, "s", nil)

	// The first request is under way while a second is sent.
	up.hold = make(chan struct{})
	first := make(chan int)
	go func() { st, _ := post(t, front.URL, token, msg("claude-opus-4-1", 64000)); first <- st }()
	for len(up.got()) == 0 {
		time.Sleep(time.Millisecond)
	}
	status, body := post(t, front.URL, token, msg("claude-opus-4-1", 64000))
	if status != http.StatusTooManyRequests || !strings.Contains(body, "model requests under way may spend it") {
		t.Errorf("a second request under way: %d %s, want 429 saying why", status, body)
	}
	close(up.hold)
	if st := <-first; st != http.StatusOK {
		t.Fatalf("the first request: %d", st)
	}
	// claude-opus-4-1: $15 and $75 a million; a cache write costs 1.25
	// times the input price, a read 0.1 times.
	want := (1000*15 + 100*15*1.25 + 1000*1.5 + 1000*75) / 1e6
	if got := s.get(7).CostUSD; math.Abs(got-want) > 1e-9 {
		t.Errorf("charged $%.6f, want $%.6f", got, want)
	}
	for range 3 {
		status, body = post(t, front.URL, token, msg("claude-opus-4-1", 64000))
		if status != http.StatusTooManyRequests || !strings.Contains(body, "This session has spent $0.09, its limit is $0.01.") {
			t.Errorf("over the limit: %d %s, want 429 with the reason", status, body)
		}
	}
	if n := len(up.got()); n != 1 {
		t.Errorf("upstream got %d requests, want 1", n)
	}
	mu.Lock()
	defer mu.Unlock()
	// Told once for each reason: three refusals over the limit, one notice.
	if len(notices) != 2 || !strings.HasPrefix(notices[1], "s: This session has spent") {
		t.Errorf("notices = %q", notices)
	}
}

// TestGatewayChargesWhatItCannotRead: a JSON body too long to keep whole
// is charged from the usage at its end; a stream cut before its final
// usage is charged for the deltas that passed.
func TestGatewayChargesWhatItCannotRead(t *testing.T) {
	text := strings.Repeat("x", 200<<10)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.URL.Query().Get("cut") != "" {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n")
			io.WriteString(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\""+text+"\"}}\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"content":[{"type":"text","text":%q}],"usage":{"input_tokens":10,"output_tokens":50000}}`, text)
	}))
	defer up.Close()
	s := &sink{u: map[int64]Usage{}, ch: make(chan struct{}, 16)}
	g, _ := New(Config{Upstream: up.URL}, s, nil, slog.New(slog.DiscardHandler))
	front := httptest.NewServer(g)
	defer front.Close()
	token, _ := g.Admit(1, "s", nil)
	post(t, front.URL, token, msg("claude-haiku-4-5", 64000))
	if got, want := s.get(1).CostUSD, (10*1+50000*5)/1e6; math.Abs(got-want) > 1e-9 {
		t.Errorf("a long JSON body: charged $%.6f, want $%.6f", got, want)
	}
	req, _ := http.NewRequest("POST", front.URL+"/v1/messages?cut=1", strings.NewReader(msg("claude-haiku-4-5", 64000)))
	req.Header.Set("X-Api-Key", token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if got, want := s.spentOf("s"), (10*1+50000*5)/1e6+40000*5/1e6; got < want {
		t.Errorf("a cut stream of 200 KB of text: charged $%.6f in all, want at least $%.6f", got, want)
	}
}

func (s *sink) spentOf(session string) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.spent[session]
}

func TestModelAllowed(t *testing.T) {
	for _, tc := range []struct {
		pin, model string
		want       bool
	}{
		{"", "claude-opus-4-1", true},
		{"claude-sonnet-4-5", "claude-sonnet-4-5", true},
		{"claude-sonnet-4-5", "claude-sonnet-4-5-20250929", true},
		{"claude-sonnet-4-5", "claude-sonnet-4-5-1", false},
		{"claude-sonnet-4-5", "claude-opus-4-1", false},
		{"claude-sonnet-4-5", "sonnet", false},
		{"claude-sonnet-4-5", "claude-haiku-4-5", true},
		{"claude-sonnet-4-5", "", false},
		{"sonnet", "claude-sonnet-5-5", true},
		{"sonnet[1m]", "claude-sonnet-5-5", true},
		{"sonnet", "claude-opus-5-5", false},
		{"opusplan", "claude-sonnet-5-5", true},
		{"opusplan", "claude-opus-5-5", true},
		{"haiku", "claude-sonnet-5-5", false},
	} {
		if got := ModelAllowed(tc.pin, tc.model); got != tc.want {
			t.Errorf("ModelAllowed(%q, %q) = %v, want %v", tc.pin, tc.model, got, tc.want)
		}
	}
}
