package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"parley/clientip"
	"parley/runner/fakeapi"
)

// loginVia signs in through h from remote with the given request headers
// and cookies (a device's); it returns the POST's response.
func loginVia(t *testing.T, h http.Handler, remote string, hdr http.Header, cookies []*http.Cookie, email, password string) *httptest.ResponseRecorder {
	t.Helper()
	get := httptest.NewRequest("GET", "http://parley.test/login", nil)
	get.RemoteAddr = remote
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, get)
	m := csrfInput.FindStringSubmatch(rec.Body.String())
	if m == nil {
		t.Fatalf("no login form:\n%s", rec.Body.String())
	}
	form := url.Values{"csrf": {m[1]}, "email": {email}, "password": {password}}
	post := httptest.NewRequest("POST", "http://parley.test/login", strings.NewReader(form.Encode()))
	post.RemoteAddr = remote
	post.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, vs := range hdr {
		for _, v := range vs {
			post.Header.Add(k, v)
		}
	}
	for _, c := range append(rec.Result().Cookies(), cookies...) {
		post.AddCookie(c)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, post)
	return rec
}

func xff(addr string) http.Header { return http.Header{"X-Forwarded-For": {addr}} }

// behindProxy has e's server trust 10.0.0.0/8 as its reverse proxies.
func behindProxy(t *testing.T, e *env) {
	t.Helper()
	r, err := clientip.Parse("10.0.0.0/8")
	if err != nil {
		t.Fatal(err)
	}
	e.srv.cfg.TrustedProxies = r
}

const proxyPeer = "10.0.0.2:40000"

// Behind a trusted proxy every client connects from the proxy's address:
// each client's address budget and each (e-mail, client) lock count that
// client alone, as its X-Forwarded-For names it.
func TestLoginBehindProxyThrottlesClientsSeparately(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true, limits: Limits{LoginsPerMinute: 3}})
	behindProxy(t, e)
	h := e.srv.Handler()
	for i := range 3 {
		if rec := loginVia(t, h, proxyPeer, xff("198.51.100.1"), nil, "nobody@example.com", "x"); rec.Code != http.StatusUnauthorized {
			t.Fatalf("attempt %d from client A: %d, want 401", i+1, rec.Code)
		}
	}
	if rec := loginVia(t, h, proxyPeer, xff("198.51.100.1"), nil, "nobody@example.com", "x"); rec.Code != http.StatusTooManyRequests {
		t.Fatalf("client A over its budget: %d, want 429", rec.Code)
	}
	if rec := loginVia(t, h, proxyPeer, xff("198.51.100.2"), nil, e.user.Email, testPassword); rec.Code != http.StatusSeeOther {
		t.Fatalf("client B after client A spent its budget: %d, want 303 (signed in)\n%s", rec.Code, rec.Body.String())
	}
	// The sign-in records the client, not the proxy.
	conn, err := pgx.Connect(t.Context(), e.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var ip string
	if err := conn.QueryRow(t.Context(), `SELECT ip FROM auth_sessions WHERE user_id = $1 ORDER BY created_at DESC LIMIT 1`, e.user.ID).Scan(&ip); err != nil {
		t.Fatal(err)
	}
	if ip != "198.51.100.2" {
		t.Errorf("the sign-in is recorded from %q, want the client 198.51.100.2", ip)
	}
}

// Each address of one IPv6 /64 (what one subscriber is given) is the same
// client to the throttle: rotating through them buys no guesses.
func TestLoginIPv6CountsBySlash64(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true})
	behindProxy(t, e)
	h := e.srv.Handler()
	for i := range maxLoginFailures {
		loginVia(t, h, proxyPeer, xff("2001:db8:1:2::"+string(rune('a'+i))), nil, e.user.Email, "guess")
	}
	if rec := loginVia(t, h, proxyPeer, xff("2001:db8:1:2::99"), nil, e.user.Email, testPassword); rec.Code != http.StatusTooManyRequests {
		t.Fatalf("another address of the /64 after %d failures: %d, want 429", maxLoginFailures, rec.Code)
	}
	if rec := loginVia(t, h, proxyPeer, xff("2001:db8:1:3::1"), nil, e.user.Email, testPassword); rec.Code != http.StatusSeeOther {
		t.Fatalf("another /64: %d, want 303", rec.Code)
	}
}

// An attacker's wrong passwords for a teammate's e-mail from one client
// address lock that address out, not the teammate elsewhere.
func TestLoginAttackerCannotLockTeammateOut(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true})
	behindProxy(t, e)
	h := e.srv.Handler()
	for range maxLoginFailures + 2 {
		loginVia(t, h, proxyPeer, xff("203.0.113.66"), nil, e.user.Email, "guess")
	}
	if rec := loginVia(t, h, proxyPeer, xff("203.0.113.66"), nil, e.user.Email, testPassword); rec.Code != http.StatusTooManyRequests {
		t.Fatalf("the attacker's address after %d failures: %d, want 429 (locked)", maxLoginFailures+2, rec.Code)
	}
	if rec := loginVia(t, h, proxyPeer, xff("198.51.100.20"), nil, e.user.Email, testPassword); rec.Code != http.StatusSeeOther {
		t.Fatalf("the teammate from another address: %d, want 303 (signed in)\n%s", rec.Code, rec.Body.String())
	}
}

// A teammate behind the attacker's own address (one office NAT) still
// signs in from a browser that signed in before: its device cookie keys
// the throttle, not the address.
func TestLoginKnownDeviceIsNotLockedOut(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true, limits: Limits{LoginsPerMinute: 20}})
	const shared = "198.51.100.30:1"
	first := loginVia(t, e.srv.Handler(), shared, nil, nil, e.user.Email, testPassword)
	if first.Code != http.StatusSeeOther {
		t.Fatalf("first sign-in: %d", first.Code)
	}
	device := first.Result().Cookies()
	h := e.srv.Handler()
	for range maxLoginFailures + 2 {
		loginVia(t, h, shared, nil, nil, e.user.Email, "guess")
	}
	if rec := loginVia(t, h, shared, nil, nil, e.user.Email, testPassword); rec.Code != http.StatusTooManyRequests {
		t.Fatalf("a browser without the device cookie: %d, want 429", rec.Code)
	}
	if rec := loginVia(t, h, shared, nil, device, e.user.Email, testPassword); rec.Code != http.StatusSeeOther {
		t.Fatalf("the teammate's known browser at the same address: %d, want 303 (signed in)\n%s", rec.Code, rec.Body.String())
	}
	// The device cookie is the teammate's: it does not open another
	// e-mail's lock at that address.
	other := e.addUser("other@example.com", "O", false)
	for range maxLoginFailures {
		loginVia(t, h, shared, nil, device, other.Email, "guess")
	}
	if rec := loginVia(t, h, shared, nil, device, other.Email, testPassword); rec.Code != http.StatusTooManyRequests {
		t.Fatalf("another e-mail with the teammate's device cookie after %d failures: %d, want 429", maxLoginFailures, rec.Code)
	}
}

// From a peer that is not a trusted proxy, X-Forwarded-For and Forwarded
// are the client's own words: changing them buys no attempts.
func TestLoginIgnoresUntrustedForwarding(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true})
	behindProxy(t, e)
	h := e.srv.Handler()
	const peer = "203.0.113.5:4000"
	for i := range maxLoginFailures {
		hdr := http.Header{"X-Forwarded-For": {"198.51.100." + string(rune('1'+i))}, "Forwarded": {"for=192.0.2." + string(rune('1'+i))}}
		loginVia(t, h, peer, hdr, nil, e.user.Email, "guess")
	}
	if rec := loginVia(t, h, peer, xff("198.51.100.99"), nil, e.user.Email, testPassword); rec.Code != http.StatusTooManyRequests {
		t.Fatalf("a new X-Forwarded-For from an untrusted peer after %d failures: %d, want 429", maxLoginFailures, rec.Code)
	}
}

// Two replicas on one database share each address's sign-in budget.
func TestLoginReplicasShareTheCount(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true, limits: Limits{LoginsPerMinute: 4}})
	other, err := New(t.Context(), e.srv.cfg, Deps{Store: e.st, Supervisor: e.sup, Hub: e.srv.hub, Broker: e.broker, Log: e.srv.log, Gateway: e.srv.gw})
	if err != nil {
		t.Fatal(err)
	}
	replicas := []http.Handler{e.srv.Handler(), other.Handler()}
	const ip = "198.51.100.40:1"
	// A new e-mail each time: only the address's budget counts them all.
	for i := range 4 {
		email := "nobody" + string(rune('a'+i)) + "@example.com"
		if rec := loginVia(t, replicas[i%2], ip, nil, nil, email, "x"); rec.Code != http.StatusUnauthorized {
			t.Fatalf("attempt %d on replica %d: %d, want 401", i+1, i%2, rec.Code)
		}
	}
	for r, h := range replicas {
		if rec := loginVia(t, h, ip, nil, nil, "somebody@example.com", "x"); rec.Code != http.StatusTooManyRequests {
			t.Errorf("the 5th attempt on replica %d: %d, want 429 (the two replicas have seen 4)", r, rec.Code)
		}
	}
}
