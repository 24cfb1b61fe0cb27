package metrics

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestHandlerGuardsAndCounts: loopback (with PARLEY_METRICS_LOOPBACK=open)
// and the token may scrape, others may not; what was recorded is in the
// exposition. TestLoopbackOwn covers the default.
func TestHandlerGuardsAndCounts(t *testing.T) {
	m := New(func() int { return 3 }, func() int { return 1 })
	now := time.Now()
	m.Event("s", "input_requested", []byte(`{"kind":"permission"}`), now)
	m.FrameSent("s", 7, "input_requested", now.Add(-20*time.Millisecond))
	m.FrameSent("s", 7, "input_requested", now.Add(-20*time.Millisecond)) // a second viewer: not re-counted
	m.Event("s", "input_resolved", []byte(`{"kind":"permission","status":"answered"}`), now)
	m.Event("s", "user", []byte(`{"message":{"content":[{"type":"tool_result"}]}}`), now.Add(5*time.Millisecond))
	m.Event("s", "run_ended", []byte(`{"exit_code":143,"reason":"stopped by Parley (idle)"}`), now)
	m.EventsWritten(100, 2*time.Millisecond)
	m.WSOpened()
	m.TakenOver(2)
	m.Lease(func() bool { return false }, func() int { return 4 })
	h := m.Handler("secret", LoopbackOpen)
	tests := []struct {
		name, remote, auth, forwarded string
		want                          int
	}{
		{"loopback", "127.0.0.1:5000", "", "", http.StatusOK},
		// A reverse proxy on the same host connects from loopback for anyone.
		{"through a proxy on loopback", "127.0.0.1:5000", "", "203.0.113.7", http.StatusForbidden},
		{"through a proxy on loopback, with the token", "127.0.0.1:5000", "Bearer secret", "203.0.113.7", http.StatusOK},
		{"through a proxy that says Forwarded", "127.0.0.1:5000", "", "Forwarded: for=203.0.113.7", http.StatusForbidden},
		{"through a proxy that says X-Real-IP", "[::1]:5000", "", "X-Real-IP: 203.0.113.7", http.StatusForbidden},
		{"remote without token", "10.0.0.8:5000", "", "", http.StatusForbidden},
		{"remote with wrong token", "10.0.0.8:5000", "Bearer nope", "", http.StatusForbidden},
		{"remote with token", "10.0.0.8:5000", "Bearer secret", "", http.StatusOK},
	}
	for _, tt := range tests {
		r := httptest.NewRequest("GET", "/metrics", nil)
		r.RemoteAddr = tt.remote
		if tt.auth != "" {
			r.Header.Set("Authorization", tt.auth)
		}
		if name, value, ok := strings.Cut(tt.forwarded, ": "); ok {
			r.Header.Set(name, value)
		} else if tt.forwarded != "" {
			r.Header.Set("X-Forwarded-For", tt.forwarded)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tt.want {
			t.Errorf("%s: status %d, want %d", tt.name, w.Code, tt.want)
		}
		if w.Code != http.StatusOK {
			continue
		}
		body := w.Body.String()
		for _, want := range []string{`parley_runs_live 3`, `parley_runs_queued 1`, `parley_asks_opened_total{kind="permission"} 1`,
			`parley_asks_resolved_total{kind="permission",outcome="answered"} 1`, `parley_ask_to_browser_seconds_count 1`,
			`parley_answer_to_tool_result_seconds_count 1`, `parley_events_written_total 100`, `parley_websocket_clients 1`,
			`parley_cli_exits_total{reason="stopped"} 1`, `parley_lease_takeovers_total 2`, `parley_lease_held 0`,
			`parley_model_requests_waiting 4`, `go_goroutines`} {
			if !strings.Contains(body, want) {
				t.Errorf("%s: exposition lacks %q", tt.name, want)
			}
		}
	}
	// Token only (PARLEY_METRICS_LOOPBACK=token): loopback needs it too.
	strict := m.Handler("secret", LoopbackToken)
	for _, tt := range []struct {
		auth string
		want int
	}{{"", http.StatusForbidden}, {"Bearer nope", http.StatusForbidden}, {"Bearer secret", http.StatusOK}} {
		r := httptest.NewRequest("GET", "/metrics", nil)
		r.RemoteAddr = "127.0.0.1:5000"
		if tt.auth != "" {
			r.Header.Set("Authorization", tt.auth)
		}
		w := httptest.NewRecorder()
		strict.ServeHTTP(w, r)
		if w.Code != tt.want {
			t.Errorf("token only, loopback with %q: status %d, want %d", tt.auth, w.Code, tt.want)
		}
	}
}
