package gateway

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestServerToolsStreamed: a streamed response's searches (the final
// message_delta's server_tool_use) are charged, and a web_search tool
// that names no max_uses goes upstream with defaultSearchUses.
func TestServerToolsStreamed(t *testing.T) {
	var got string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = string(b)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n")
		io.WriteString(w, "event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":10,\"server_tool_use\":{\"web_search_requests\":5}}}\n\n")
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
	req, _ := http.NewRequest("POST", front.URL+"/v1/messages", strings.NewReader(
		`{"model":"claude-haiku-4-5","max_tokens":100,"stream":true,"tools":[{"type":"web_search_20250305","name":"web_search"}],"messages":[{"role":"user","content":"q"}]}`))
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
	if u := s.get(1); u.CostUSD < 5*webSearchUSD {
		t.Errorf("5 streamed searches charged $%.6f, want at least $%.2f", u.CostUSD, 5*webSearchUSD)
	}
	if !strings.Contains(got, `"max_uses":20`) {
		t.Errorf("the upstream got no max_uses on web_search: %s", got)
	}
}
