package server

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"golang.org/x/crypto/bcrypt"
)

// testUser is an account of a test env, signed in once.
type testUser struct {
	ID       int64
	Email    string
	Name     string
	Password string
	Admin    bool
	Cookie   string // the sign-in cookie's token
	CSRF     string // its CSRF token
}

func (u *testUser) String() string {
	if u == nil {
		return "anonymous"
	}
	return u.Email
}

// testPassword is every test account's password.
const testPassword = "correct horse battery"

// addUser creates an account (bcrypt at its minimum cost, for speed) and
// signs it in through the login form.
func (e *env) addUser(email, name string, admin bool) *testUser {
	e.t.Helper()
	h, err := hashPasswordCost(testPassword, bcrypt.MinCost)
	if err != nil {
		e.t.Fatal(err)
	}
	u, err := e.st.CreateUser(e.t.Context(), email, name, h, admin)
	if err != nil {
		e.t.Fatal(err)
	}
	tu := &testUser{ID: u.ID, Email: email, Name: u.DisplayName(), Password: testPassword, Admin: admin}
	e.login(tu)
	return tu
}

// member creates an account with role in the env's project, signed in.
func (e *env) member(email, name, role string) *testUser {
	e.t.Helper()
	u := e.addUser(email, name, false)
	if err := e.st.SetMember(e.t.Context(), e.project.ID, u.ID, role); err != nil {
		e.t.Fatal(err)
	}
	return u
}

var csrfInput = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// login signs u in through GET and POST /login, as a browser does, and
// keeps the sign-in's cookie and CSRF token.
func (e *env) login(u *testUser) {
	e.t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	page := e.fetch(c, "/login")
	m := csrfInput.FindStringSubmatch(page)
	if m == nil {
		e.t.Fatalf("login page has no csrf field:\n%s", page)
	}
	resp, err := c.PostForm(e.web.URL+"/login", url.Values{"csrf": {m[1]}, "email": {u.Email}, "password": {u.Password}})
	if err != nil {
		e.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		e.t.Fatalf("login as %s: status %d", u.Email, resp.StatusCode)
	}
	for _, ck := range resp.Cookies() {
		if ck.Name == sessionCookie {
			u.Cookie = ck.Value
		}
	}
	if u.Cookie == "" {
		e.t.Fatalf("login as %s set no %s cookie", u.Email, sessionCookie)
	}
	m = csrfInput.FindStringSubmatch(e.getAs(u, "/inbox"))
	if m == nil {
		e.t.Fatal("the inbox page has no csrf field")
	}
	u.CSRF = m[1]
}

// fetch fetches path with c and returns the body.
func (e *env) fetch(c *http.Client, path string) string {
	e.t.Helper()
	resp, err := c.Get(e.web.URL + path)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// header is what a browser of u sends: the Origin and the sign-in cookie.
func (e *env) header(u *testUser) http.Header {
	h := http.Header{"Origin": {e.web.URL}}
	if u != nil && u.Cookie != "" {
		h.Set("Cookie", sessionCookie+"="+u.Cookie)
	}
	return h
}

// do sends a request as u (nil: signed out) without following redirects.
func (e *env) do(u *testUser, method, path string, form url.Values) *http.Response {
	e.t.Helper()
	var body *strings.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	} else {
		body = strings.NewReader("")
	}
	req, err := http.NewRequestWithContext(e.t.Context(), method, e.web.URL+path, body)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header = e.header(u)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// getAs fetches path as u and returns the body.
func (e *env) getAs(u *testUser, path string) string {
	e.t.Helper()
	resp := e.do(u, http.MethodGet, path, nil)
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// postAs sends a form as u with u's CSRF token.
func (e *env) postAs(u *testUser, path string, form url.Values) *http.Response {
	e.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	if u != nil && form.Get(csrfField) == "" {
		form.Set(csrfField, u.CSRF)
	}
	return e.do(u, http.MethodPost, path, form)
}

// browser starts a headless Chromium signed in as the env's member: the
// sign-in cookie is set for the test server's host (every port of it, so
// a proxy in front of the server gets it too).
func (e *env) browser(t testing.TB) context.Context {
	t.Helper()
	ctx := browser(t)
	e.signInBrowser(t, ctx, e.user)
	return ctx
}

// signInBrowser gives the browser u's sign-in cookie.
func (e *env) signInBrowser(t testing.TB, ctx context.Context, u *testUser) {
	t.Helper()
	step(t, ctx, "set the sign-in cookie", chromedp.ActionFunc(func(ctx context.Context) error {
		return network.SetCookie(sessionCookie, u.Cookie).WithURL(e.web.URL).WithHTTPOnly(true).
			WithSameSite(network.CookieSameSiteLax).Do(ctx)
	}))
}
