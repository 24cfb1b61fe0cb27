package server

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"parley/limit"
	"parley/runner/fakeapi"
)

// The 5th wrong password locks; the right one as the 5th attempt still
// signs in, and resets the count.
func TestLoginLocksOnTheFifthWrongPassword(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true})
	h := e.srv.Handler()
	const ip = "198.51.100.21:5555"
	try := func(password string) int {
		return loginRecorded(t, h, "http://parley.test", ip, e.user.Email, password).Code
	}
	for i := range maxLoginFailures - 1 {
		if got := try("wrong"); got != http.StatusUnauthorized {
			t.Fatalf("wrong password %d: status %d, want 401", i+1, got)
		}
	}
	if got := try(testPassword); got != http.StatusSeeOther {
		t.Fatalf("the right password after %d wrong ones: status %d, want 303 (signed in)", maxLoginFailures-1, got)
	}
	// The success cleared the count: five more wrong ones, the 5th locks.
	for i := range maxLoginFailures {
		want := http.StatusUnauthorized
		if i == maxLoginFailures-1 {
			want = http.StatusTooManyRequests
		}
		if got := try("wrong"); got != want {
			t.Fatalf("wrong password %d after the reset: status %d, want %d", i+1, got, want)
		}
	}
	if got := try(testPassword); got != http.StatusTooManyRequests {
		t.Fatalf("the right password during the lock: status %d, want 429", got)
	}
}

func TestLoginFailureRowsArePruned(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true})
	// Stale rows: a window long past, and a lock that has ended.
	if err := e.exec(`INSERT INTO login_failures (email, ip, failures, first_at, locked_until) VALUES
		('old@example.com', '192.0.2.1', 3, now() - interval '1 hour', NULL),
		('gone@example.com', '192.0.2.2', 0, now() - interval '1 hour', now() - interval '1 minute'),
		('locked@example.com', '192.0.2.3', 0, now() - interval '1 hour', now() + interval '10 minutes')`); err != nil {
		t.Fatal(err)
	}
	loginRecorded(t, e.srv.Handler(), "http://parley.test", "192.0.2.9:1", "nobody@example.com", "x")
	n, err := e.st.CountLoginFailureRows(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// Kept: the running lock and the new failure.
	if n != 2 {
		t.Fatalf("%d throttling rows after a failure; want 2 (stale rows pruned)", n)
	}
}

// Password checks of sign-ins run in a bounded pool, for known and unknown
// emails alike: with every worker busy, both wait and then are turned away.
func TestLoginBcryptIsBounded(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true})
	e.srv.lim.bcrypt = limit.NewPool(1, 200*time.Millisecond)
	release, held := make(chan struct{}), make(chan struct{})
	go e.srv.lim.bcrypt.Do(context.Background(), func() { close(held); <-release })
	<-held
	defer close(release)
	h := e.srv.Handler()
	for i, email := range []string{e.user.Email, "nobody@example.com"} {
		rec := loginRecorded(t, h, "http://parley.test", "192.0.2.50:"+string(rune('1'+i)), email, "whatever")
		if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "checking too many sign-ins") {
			t.Errorf("login of %s with the pool full: %d %q; want 503 and a sentence", email, rec.Code, rec.Body.String())
		}
	}
}

func TestLoginRedirectRefusesOtherHosts(t *testing.T) {
	for in, want := range map[string]string{
		"/sessions/x?a=b":     "/sessions/x?a=b",
		"/\t/evil.example":    "/",
		"/\n/evil.example":    "/",
		"/\r\n/evil.example":  "/",
		"//evil.example":      "/",
		"/\\evil.example":     "/",
		"/a\\b":               "/",
		"https://evil":        "/",
		"javascript:alert(1)": "/",
		" /x":                 "/",
		"/\u2028/evil":        "/",
		"/%2F%2Fevil":         "/", // refused too: decoded, it starts with //
	} {
		if got := localPath(in); got != want {
			t.Errorf("localPath(%q) = %q, want %q", in, got, want)
		}
	}
	// End to end: the login form carries next=/%09/evil.example.
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true})
	h := e.srv.Handler()
	get := httptest.NewRequest("GET", "http://parley.test/login?next=/%09/evil.example", nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, get)
	m := csrfInput.FindStringSubmatch(rec.Body.String())
	if m == nil {
		t.Fatal("no login form")
	}
	form := url.Values{"csrf": {m[1]}, "email": {e.user.Email}, "password": {testPassword}, "next": {"/\t/evil.example"}}
	post := httptest.NewRequest("POST", "http://parley.test/login", strings.NewReader(form.Encode()))
	post.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for _, c := range rec.Result().Cookies() {
		post.AddCookie(c)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, post)
	if loc := rec.Header().Get("Location"); rec.Code != http.StatusSeeOther || loc != "/" {
		t.Fatalf("after login with next=/%%09/evil.example: %d to %q; want 303 to /", rec.Code, loc)
	}
}

func TestSecurityHeadersOnEveryResponse(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true})
	for _, path := range []string{"/login", "/", "/static/app.js", "/healthz", "/sessions/nope"} {
		resp := e.do(nil, http.MethodGet, path, nil)
		csp := resp.Header.Get("Content-Security-Policy")
		for _, want := range []string{"script-src 'self'", "frame-ancestors 'none'", "object-src 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: CSP %q lacks %q", path, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
			t.Errorf("%s: CSP allows inline script or eval: %q", path, csp)
		}
		if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s: X-Content-Type-Options %q", path, got)
		}
		if got := resp.Header.Get("Referrer-Policy"); got != "same-origin" {
			t.Errorf("%s: Referrer-Policy %q", path, got)
		}
	}
	// The pages carry no inline script or event handler for the CSP to block.
	page := e.getAs(e.user, "/projects/"+pid(e))
	for _, bad := range []string{"<script>", "onclick=", "onload=", "onsubmit=", "javascript:", "hx-on"} {
		if strings.Contains(page, bad) {
			t.Errorf("the project page contains %q", bad)
		}
	}
}

func TestBodyLimits(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true})
	big := strings.Repeat("x", 2<<20)
	tests := []struct {
		name, path string
		form       url.Values
		limit      string
	}{
		{"login", "/login", url.Values{"email": {big}}, "64 KB"},
		{"project rename", "/projects/" + pid(e) + "/rename", url.Values{"name": {big}}, "64 KB"},
		{"new session", "/projects/" + pid(e) + "/sessions", url.Values{"text": {big}}, "1 MB"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := e.postAs(e.user, tc.path, tc.form)
			b := readAll(resp)
			if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(b, "too large (the limit is "+tc.limit+")") {
				t.Fatalf("%s with a 2 MB body: %d %.200q; want 413 naming the limit", tc.path, resp.StatusCode, b)
			}
		})
	}
	// Sent chunked (no Content-Length), the limit holds all the same.
	req, _ := http.NewRequestWithContext(t.Context(), "POST", e.web.URL+"/login", struct{ *strings.Reader }{strings.NewReader(big)})
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("chunked 2 MB login: %d; want 413", resp.StatusCode)
	}
}

func TestBodyLimitForRoutes(t *testing.T) {
	for path, want := range map[string]int64{
		"/sessions": largeBodyBytes, "/projects/3/sessions": largeBodyBytes, "/projects/3/settings": largeBodyBytes,
		"/mcp": largeBodyBytes, "/login": defaultBodyBytes, "/projects/3/rename": defaultBodyBytes, "/tokens": defaultBodyBytes,
	} {
		if got := bodyLimitFor(httptest.NewRequest("POST", path, nil)); got != want {
			t.Errorf("body limit of %s = %d; want %d", path, got, want)
		}
	}
}

func TestHTTPServerTimeouts(t *testing.T) {
	s := NewHTTPServer(http.NotFoundHandler())
	if s.ReadHeaderTimeout <= 0 || s.ReadTimeout <= 0 || s.IdleTimeout <= 0 || s.MaxHeaderBytes <= 0 {
		t.Fatalf("server limits: header %v, read %v, idle %v, header bytes %d; want all set",
			s.ReadHeaderTimeout, s.ReadTimeout, s.IdleTimeout, s.MaxHeaderBytes)
	}
}

// A NUL character cannot be stored in Postgres: a prompt with one is
// refused with a sentence on every path, and nothing reaches Claude.
func TestNULIsRefusedEverywhere(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "never"}}, envOptions{quiet: true})
	before, _ := e.st.ListSessions(t.Context(), e.project.ID)
	resp := e.postAs(e.user, "/projects/"+pid(e)+"/sessions", url.Values{"text": {"hello\x00world"}})
	if b := readAll(resp); resp.StatusCode != http.StatusBadRequest || !strings.Contains(b, "NUL character") {
		t.Errorf("new session with a NUL: %d %.200q; want 400 naming the NUL", resp.StatusCode, b)
	}
	after, _ := e.st.ListSessions(t.Context(), e.project.ID)
	if len(after) != len(before) {
		t.Errorf("a session was created for a prompt with a NUL")
	}
	if resp := e.do(e.user, http.MethodGet, "/projects/"+pid(e)+"/history?q=a%00b", nil); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("search with a NUL: %d; want 400", resp.StatusCode)
	}
	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt("hi\x00there")
	w.waitFor(10*time.Second, "NUL character")
	w.send(map[string]any{"action": "answer", "input_id": "00000000-0000-0000-0000-000000000000", "other": "a\x00b"})
	w.waitFor(10*time.Second, "NUL character", "NUL character")
	if n := len(e.fake.Requests()); n != 0 {
		t.Errorf("the model got %d requests; want none", n)
	}
	if types := e.eventTypes(s.ID); len(types) != 0 {
		t.Errorf("the session log has %v; want nothing", types)
	}
}

func pid(e *env) string { return strconv.FormatInt(e.project.ID, 10) }

func readAll(resp *http.Response) string {
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
