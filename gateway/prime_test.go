package gateway

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"parley/streamjson"
)

// A priming token's requests are answered by the gateway itself: nothing
// reaches the upstream, nothing is charged, the answer's id marks it as a
// prime's; once priming ends, the token's requests go upstream again, and
// another token is never primed by it.
func TestPrimeIsAnsweredHereAndCostsNothing(t *testing.T) {
	var upstreamHits atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		upstreamHits.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_real\",\"usage\":{\"input_tokens\":12,\"output_tokens\":1}}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	}))
	defer up.Close()
	s := &sink{u: map[int64]Usage{}, ch: make(chan struct{}, 8)}
	g, err := New(Config{Upstream: up.URL, APIKey: "real-key"}, s, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(g)
	defer front.Close()
	token, revoke := g.Admit(4, "sess", nil)
	defer revoke()
	other, revokeOther := g.Admit(4, "other", nil)
	defer revokeOther()

	post := func(tok, path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", front.URL+path, strings.NewReader(body))
		req.Header.Set("X-Api-Key", tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	end := g.Prime(token)
	code, body := post(token, "/v1/messages", `{"model":"claude-x","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if code != 200 || !strings.Contains(body, `"id":"`+streamjson.PrimeMessagePrefix) || !strings.Contains(body, "message_stop") ||
		!strings.Contains(body, `"model":"claude-x"`) {
		t.Fatalf("prime answer = %d %s", code, body)
	}
	_, body2 := post(token, "/v1/messages", `{"model":"claude-x","stream":true}`)
	if body2 == body {
		t.Fatal("two prime answers share one message id; the CLI would merge them on --resume")
	}
	if code, body := post(token, "/v1/messages/count_tokens", `{"model":"claude-x"}`); code != 200 || body != `{"input_tokens":0}` {
		t.Fatalf("count_tokens while priming = %d %s", code, body)
	}
	if code, body := post(token, "/v1/messages", `{"model":"claude-x"}`); code != 200 || !strings.Contains(body, `"text":"ok"`) {
		t.Fatalf("a prime without stream = %d %s", code, body)
	}
	if n := upstreamHits.Load(); n != 0 {
		t.Fatalf("the upstream got %d requests while the token primed", n)
	}
	// Another token is not primed by it.
	if _, body := post(other, "/v1/messages", `{"model":"claude-x","stream":true}`); !strings.Contains(body, "msg_real") {
		t.Fatalf("another token's request = %s", body)
	}
	end()
	if _, body := post(token, "/v1/messages", `{"model":"claude-x","stream":true}`); !strings.Contains(body, "msg_real") {
		t.Fatalf("after priming = %s", body)
	}
	if n := upstreamHits.Load(); n != 2 {
		t.Fatalf("upstream requests = %d, want 2 (the other token's and the one after priming)", n)
	}
	<-s.ch
	<-s.ch
	if u := s.get(4); u.Requests != 2 || u.InputTokens != 24 {
		t.Fatalf("usage = %+v, want only the two forwarded requests charged", u)
	}
	// A revoked token is refused, primed or not.
	revoke()
	g.Prime(token)
	if code, _ := post(token, "/v1/messages", `{}`); code != http.StatusUnauthorized {
		t.Fatalf("a revoked token primed = %d, want 401", code)
	}
}
