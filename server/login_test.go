package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"parley/runner/fakeapi"
)

// loginRecorded signs in through the handler directly, so the test sets
// the request's TLS state and client address.
func loginRecorded(t *testing.T, h http.Handler, target, remote, email, password string) *httptest.ResponseRecorder {
	t.Helper()
	get := httptest.NewRequest("GET", target+"/login", nil)
	get.RemoteAddr = remote
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, get)
	m := csrfInput.FindStringSubmatch(rec.Body.String())
	if m == nil {
		t.Fatalf("no login form:\n%s", rec.Body.String())
	}
	form := url.Values{"csrf": {m[1]}, "email": {email}, "password": {password}}
	post := httptest.NewRequest("POST", target+"/login", strings.NewReader(form.Encode()))
	post.RemoteAddr = remote
	post.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for _, c := range rec.Result().Cookies() {
		post.AddCookie(c)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, post)
	return rec
}

func sessionCookieOf(rec *httptest.ResponseRecorder) *http.Cookie {
	for _, c := range rec.Result().Cookies() {
		if c.Name == sessionCookie {
			return c
		}
	}
	return nil
}

func TestSessionCookieFlags(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true})
	h := e.srv.Handler()
	for _, tt := range []struct {
		target     string
		secureConf bool
		wantSecure bool
	}{
		{"http://parley.test", false, false},
		{"https://parley.test", false, true}, // httptest sets r.TLS for https
		{"http://parley.test", true, true},   // behind a TLS proxy
	} {
		e.srv.cfg.SecureCookies = tt.secureConf
		rec := loginRecorded(t, h, tt.target, "192.0.2.1:1234", e.user.Email, testPassword)
		if rec.Code != http.StatusSeeOther {
			t.Fatalf("login on %s: %d\n%s", tt.target, rec.Code, rec.Body.String())
		}
		c := sessionCookieOf(rec)
		if c == nil {
			t.Fatal("no sign-in cookie")
		}
		if !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/" || c.Secure != tt.wantSecure || c.MaxAge <= 0 {
			t.Errorf("%s (secure config %v): cookie %+v; want HttpOnly, SameSite=Lax, Path=/, Secure=%v, a Max-Age",
				tt.target, tt.secureConf, c, tt.wantSecure)
		}
		if len(c.Value) < 40 {
			t.Errorf("token %q is short", c.Value)
		}
	}
	e.srv.cfg.SecureCookies = false
}

// signedIn reports whether u's cookie still opens a page.
func (e *env) signedIn(u *testUser) bool {
	e.t.Helper()
	resp := e.do(u, "GET", "/inbox", nil)
	return resp.StatusCode == http.StatusOK
}

func TestSignInsEnd(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true})
	ctx := t.Context()
	a := e.addUser("a@example.com", "A", false)
	a2 := &testUser{ID: a.ID, Email: a.Email, Password: testPassword}
	e.login(a2) // a second browser of the same user
	if !e.signedIn(a) || !e.signedIn(a2) {
		t.Fatal("fresh sign-ins do not work")
	}
	// Logout ends that sign-in only.
	if resp := e.postAs(a, "/logout", nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("logout: %d", resp.StatusCode)
	}
	if e.signedIn(a) {
		t.Error("the cookie still works after logout")
	}
	if !e.signedIn(a2) {
		t.Error("logout ended the user's other sign-in")
	}
	// A password change ends every sign-in of the user, and a live
	// WebSocket's next action is refused.
	s := e.newSession()
	if err := e.st.SetMember(ctx, e.project.ID, a.ID, roleMember); err != nil {
		t.Fatal(err)
	}
	w := e.dialAs(a2, s.ID, 0)
	h, _ := hashPasswordCost("a new password!", 4)
	if err := e.st.SetPassword(ctx, a.ID, h); err != nil {
		t.Fatal(err)
	}
	if e.signedIn(a2) {
		t.Error("the cookie still works after a password change")
	}
	w.prompt("hello")
	w.waitFor(10*time.Second, "your sign-in has ended")
	// Removing a user ends their sign-ins.
	b := e.addUser("b@example.com", "B", false)
	if err := e.st.DeleteUser(ctx, b.ID); err != nil {
		t.Fatal(err)
	}
	if e.signedIn(b) {
		t.Error("the cookie still works after the user was removed")
	}
	// An expired sign-in is refused by the server, whatever the browser keeps.
	c := e.addUser("c@example.com", "C", false)
	if err := e.exec(`UPDATE auth_sessions SET expires_at = now() - interval '1 second' WHERE user_id = $1`, c.ID); err != nil {
		t.Fatal(err)
	}
	if e.signedIn(c) {
		t.Error("an expired sign-in still works")
	}
}

func TestLoginThrottle(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true})
	h := e.srv.Handler()
	const ip = "198.51.100.7:5555"
	for i := range maxLoginFailures {
		rec := loginRecorded(t, h, "http://parley.test", ip, e.user.Email, "wrong password")
		want := http.StatusUnauthorized
		if i == maxLoginFailures-1 {
			want = http.StatusTooManyRequests
		}
		if rec.Code != want {
			t.Fatalf("failure %d: status %d, want %d", i+1, rec.Code, want)
		}
	}
	rec := loginRecorded(t, h, "http://parley.test", ip, e.user.Email, testPassword)
	if rec.Code != http.StatusTooManyRequests || sessionCookieOf(rec) != nil || !strings.Contains(rec.Body.String(), "Too many failed sign-ins") {
		t.Errorf("the right password during the lock: %d, cookie %v", rec.Code, sessionCookieOf(rec))
	}
	// The lock is per email and address: the same user elsewhere, and
	// another user here, still sign in.
	if rec := loginRecorded(t, h, "http://parley.test", "203.0.113.9:1", e.user.Email, testPassword); rec.Code != http.StatusSeeOther {
		t.Errorf("from another address: %d", rec.Code)
	}
	other := e.addUser("other@example.com", "O", false)
	if rec := loginRecorded(t, h, "http://parley.test", ip, other.Email, testPassword); rec.Code != http.StatusSeeOther {
		t.Errorf("another user from the locked address: %d", rec.Code)
	}
	// An unknown email fails like a wrong password.
	if rec := loginRecorded(t, h, "http://parley.test", "203.0.113.10:1", "nobody@example.com", testPassword); rec.Code != http.StatusUnauthorized ||
		!strings.Contains(rec.Body.String(), "Wrong email or password.") {
		t.Errorf("unknown email: %d", rec.Code)
	}
}

func TestLoginRedirectStaysLocal(t *testing.T) {
	for in, want := range map[string]string{
		"/sessions/x":      "/sessions/x",
		"//evil.example/":  "/",
		"/\\evil.example":  "/",
		"https://evil/":    "/",
		"":                 "/",
		"/a\r\nSet-Cookie": "/",
	} {
		if got := localPath(in); got != want {
			t.Errorf("localPath(%q) = %q, want %q", in, got, want)
		}
	}
}

// exec runs SQL on the env's database, for states no handler makes.
func (e *env) exec(sql string, args ...any) error {
	e.t.Helper()
	conn, err := pgx.Connect(e.t.Context(), e.dbURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(e.t.Context(), sql, args...)
	return err
}

// A watcher who only watches (sends nothing) loses the session and inbox
// sockets within a ping period once their sign-in ends.
func TestPassiveWatchersLoseAccess(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true, pingPeriod: 200 * time.Millisecond})
	a := e.addUser("watcher@example.com", "W", false)
	if err := e.st.SetMember(t.Context(), e.project.ID, a.ID, roleMember); err != nil {
		t.Fatal(err)
	}
	s := e.newSession()
	session := e.dialAs(a, s.ID, 0)
	inbox := e.dialPathAs(a, "/inbox/ws")
	inbox.waitFor(10*time.Second, `data-count="0"`)
	if resp := e.postAs(a, "/logout", nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("logout: %d", resp.StatusCode)
	}
	for name, w := range map[string]*ws{"session": session, "inbox": inbox} {
		timeout := time.After(10 * time.Second)
	drain:
		for {
			select {
			case _, ok := <-w.frames:
				if !ok {
					break drain
				}
			case <-timeout:
				t.Fatalf("the %s socket is still open after logout", name)
			}
		}
	}
}

// A burst of concurrent wrong passwords gets no more password checks than
// the lock allows: each attempt is counted before it is checked.
func TestLoginThrottleHoldsUnderABurst(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true})
	h := e.srv.Handler()
	const ip = "198.51.100.9:5555"
	codes := make(chan int, 12)
	var wg sync.WaitGroup
	for range 12 {
		wg.Go(func() {
			codes <- loginRecorded(t, h, "http://parley.test", ip, e.user.Email, "wrong password").Code
		})
	}
	wg.Wait()
	close(codes)
	checked := 0
	for c := range codes {
		if c == http.StatusUnauthorized {
			checked++
		}
	}
	if checked >= maxLoginFailures {
		t.Errorf("%d of 12 concurrent attempts were checked; the lock allows %d", checked, maxLoginFailures-1)
	}
}
