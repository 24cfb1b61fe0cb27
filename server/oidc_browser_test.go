package server

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"golang.org/x/oauth2"

	"parley/audit"
	"parley/hub"
	"parley/oidclogin"
	"parley/runner/fakeapi"
	"parley/store"
)

// ssoEnv is a Parley whose login page offers the test OP, and a fresh
// Chromium (signed in nowhere).
func ssoEnv(t *testing.T, refresh time.Duration, change func(*oidclogin.Config)) (*env, *testOP, context.Context) {
	t.Helper()
	o := startOP(t)
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true, sso: o.provider(refresh, change)})
	o.set(func(o *testOP) { o.redirect = e.web.URL + oidclogin.CallbackPath })
	return e, o, browser(t)
}

// opSignIn clicks "Sign in with Test OP" on Parley's login page and signs
// in at the provider's own page as user.
func opSignIn(t *testing.T, e *env, ctx context.Context, user string) {
	t.Helper()
	step(t, ctx, "sign in through the provider as "+user,
		chromedp.Navigate(e.web.URL+"/login"),
		chromedp.WaitVisible(`#sso-login`, chromedp.ByID),
		chromedp.Click(`#sso-login`, chromedp.ByID),
		chromedp.WaitVisible(`#username`, chromedp.ByID),
	)
	opLogin(t, ctx, user)
	backAtParley(t, e, ctx)
}

// backAtParley waits until the provider has sent the browser back to
// Parley and the page there has loaded.
func backAtParley(t *testing.T, e *env, ctx context.Context) {
	t.Helper()
	step(t, ctx, "back at Parley", chromedp.ActionFunc(func(ctx context.Context) error {
		for {
			var loc, state string
			if err := chromedp.Run(ctx, chromedp.Location(&loc), chromedp.Evaluate(`document.readyState`, &state)); err != nil {
				return err
			}
			if strings.HasPrefix(loc, e.web.URL+"/") && state == "complete" {
				return nil
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
		}
	}))
}

// opLogin fills the provider's login form.
func opLogin(t *testing.T, ctx context.Context, user string) {
	t.Helper()
	step(t, ctx, "the provider's login form",
		chromedp.SendKeys(`#username`, user, chromedp.ByID),
		chromedp.SendKeys(`#password`, opPassword, chromedp.ByID),
		chromedp.Submit(`#password`, chromedp.ByID),
	)
}

// refusedWith waits for Parley's login page to show the refusal.
func refusedWith(t *testing.T, ctx context.Context, want string) {
	t.Helper()
	var msg string
	step(t, ctx, "the refusal", chromedp.WaitVisible(`#login-error`, chromedp.ByID), chromedp.Text(`#login-error`, &msg, chromedp.ByID))
	if !strings.Contains(msg, want) {
		t.Errorf("refusal = %q, want it to say %q", msg, want)
	}
}

// signedInAs reads who the browser's Parley page says is signed in ("" = nobody).
func signedInAs(t *testing.T, e *env, ctx context.Context) string {
	t.Helper()
	var who string
	var loc string
	step(t, ctx, "open Parley", chromedp.Navigate(e.web.URL+"/"), chromedp.WaitReady(`body`), chromedp.Location(&loc))
	if strings.Contains(loc, "/login") {
		return ""
	}
	step(t, ctx, "read the account", chromedp.AttributeValue(`.user-nav .user`, "title", &who, nil))
	return who
}

func noAccount(t *testing.T, e *env, email string) {
	t.Helper()
	if _, err := e.st.UserByEmail(t.Context(), email); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("an account for %s exists after a refused sign-in (err %v)", email, err)
	}
}

// TestOIDCSignIn: the login page's button, the provider's login page, and
// back signed in with an account made just in time, the group's project
// role, and the sign-in recorded for its re-checks.
func TestOIDCSignIn(t *testing.T) {
	e, _, ctx := ssoEnv(t, time.Hour, nil)
	opSignIn(t, e, ctx, "alice")
	if who := signedInAs(t, e, ctx); who != "alice@example.com" {
		t.Fatalf("after the provider, Parley shows %q signed in, want alice@example.com", who)
	}
	u, err := e.st.UserByEmail(t.Context(), "alice@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if u.IsAdmin || u.PasswordHash != "" || u.Name != "alice Tester" {
		t.Errorf("account = %+v, want no admin, no password, the provider's name", u)
	}
	if a, _ := e.st.ProjectAccess(t.Context(), e.project.ID, u.ID); a.Role != roleMember {
		t.Errorf("role in the project = %q, want member (group eng)", a.Role)
	}
}

// TestOIDCForgedState: a code the provider issued for a flow this browser
// did not start (state "forged", as a login-CSRF attacker sends) is
// refused, and nobody is signed in.
func TestOIDCForgedState(t *testing.T) {
	e, o, ctx := ssoEnv(t, time.Hour, nil)
	step(t, ctx, "start a sign-in (the flow cookie is set)",
		chromedp.Navigate(e.web.URL+oidclogin.StartPath), chromedp.WaitVisible(`#username`, chromedp.ByID))
	v := oauth2.GenerateVerifier()
	forged := (&oauth2.Config{ClientID: opClientID, RedirectURL: e.web.URL + oidclogin.CallbackPath,
		Endpoint: oauth2.Endpoint{AuthURL: o.URL + "/auth"}, Scopes: []string{"openid", "email", "profile"}}).
		AuthCodeURL("forged", oauth2.S256ChallengeOption(v), oauth2.SetAuthURLParam("nonce", "n"))
	step(t, ctx, "the attacker's authorization request", chromedp.Navigate(forged), chromedp.WaitVisible(`#username`, chromedp.ByID))
	opLogin(t, ctx, "alice")
	backAtParley(t, e, ctx)
	refusedWith(t, ctx, "its state does not match")
	if who := signedInAs(t, e, ctx); who != "" {
		t.Errorf("signed in as %s with a forged state", who)
	}
	noAccount(t, e, "alice@example.com")
}

// TestOIDCWrongAudience: an ID token the provider made for another client
// is refused (go-oidc's audience check).
func TestOIDCWrongAudience(t *testing.T) {
	e, o, ctx := ssoEnv(t, time.Hour, nil)
	o.set(func(o *testOP) { o.audience = "another-app" })
	opSignIn(t, e, ctx, "alice")
	refusedWith(t, ctx, "meant for another application")
	noAccount(t, e, "alice@example.com")
}

// TestOIDCExpiredToken: an ID token whose exp has passed is refused.
func TestOIDCExpiredToken(t *testing.T) {
	e, o, ctx := ssoEnv(t, time.Hour, nil)
	o.set(func(o *testOP) { o.lifetime = -2 * time.Minute })
	opSignIn(t, e, ctx, "alice")
	refusedWith(t, ctx, "has expired")
	noAccount(t, e, "alice@example.com")
}

// TestOIDCDomainNotAllowed: a verified address of another domain is
// refused with a sentence that says which domains may sign in.
func TestOIDCDomainNotAllowed(t *testing.T) {
	e, _, ctx := ssoEnv(t, time.Hour, nil)
	opSignIn(t, e, ctx, "mallory")
	refusedWith(t, ctx, "mallory@evil.example is not an address of a domain allowed to sign in here (example.com)")
	noAccount(t, e, "mallory@evil.example")
}

// TestOIDCGroupChangeEndsSignIn: sign-ins are re-checked with the provider
// every Refresh (1 s here): unchanged groups keep the sign-in (its refresh
// token is used and rotated), and once the provider takes alice out of
// "eng" the next check ends it and takes the project role away.
func TestOIDCGroupChangeEndsSignIn(t *testing.T) {
	e, o, ctx := ssoEnv(t, time.Second, nil)
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.srv.sso.Run(runCtx) }()
	t.Cleanup(func() { stop(); <-done })
	opSignIn(t, e, ctx, "alice")
	if who := signedInAs(t, e, ctx); who != "alice@example.com" {
		t.Fatalf("signed in as %q, want alice@example.com", who)
	}
	time.Sleep(3 * time.Second) // two or more re-checks with the groups unchanged
	if who := signedInAs(t, e, ctx); who != "alice@example.com" {
		t.Fatalf("after re-checks with unchanged groups, signed in as %q", who)
	}
	o.setGroups("alice")
	deadline := time.Now().Add(5 * time.Second) // Refresh + a tick, with room
	for signedInAs(t, e, ctx) != "" {
		if time.Now().After(deadline) {
			t.Fatal("still signed in 5 s after the provider took alice out of eng (refresh 1 s)")
		}
		time.Sleep(200 * time.Millisecond)
	}
	u, _ := e.st.UserByEmail(t.Context(), "alice@example.com")
	if a, _ := e.st.ProjectAccess(t.Context(), e.project.ID, u.ID); a.Role != "" {
		t.Errorf("role in the project after leaving eng = %q, want none", a.Role)
	}
	// The audit trail holds what the groups did, as the system.
	var got []string
	rows, err := audit.New(e.st).List(t.Context(), audit.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Target == "alice@example.com" && r.Surface == audit.System && r.ActorName == "groups at Test OP" {
			got = append([]string{r.Action}, got...) // oldest first
		}
	}
	if want := []string{audit.MemberAdd, audit.MemberRemove}; !slices.Equal(got, want) {
		t.Errorf("audit rows of the groups' changes = %v, want %v", got, want)
	}
}

// TestOIDCDeactivatedAtOnce: an admin deactivating a person who signed in
// through the provider ends that sign-in at once (not at the next
// re-check, an hour away here), and the provider cannot sign them in
// again.
func TestOIDCDeactivatedAtOnce(t *testing.T) {
	e, _, ctx := ssoEnv(t, time.Hour, nil)
	opSignIn(t, e, ctx, "alice")
	if who := signedInAs(t, e, ctx); who != "alice@example.com" {
		t.Fatalf("signed in as %q, want alice@example.com", who)
	}
	u, err := e.st.UserByEmail(t.Context(), "alice@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.st.SetDeactivated(t.Context(), u.ID, true); err != nil {
		t.Fatal(err)
	}
	if who := signedInAs(t, e, ctx); who != "" {
		t.Errorf("still signed in as %s after the deactivation", who)
	}
	opSignIn(t, e, ctx, "alice")
	refusedWith(t, ctx, "Your Parley account is deactivated")
	if who := signedInAs(t, e, ctx); who != "" {
		t.Errorf("a deactivated account signed in again through the provider as %s", who)
	}
}

// TestOIDCPasswordLoginOff: with password sign-in off the form is gone and
// POST /login is refused, even with the right password. (A second server
// on the env's database: the env signs its people in with passwords.)
func TestOIDCPasswordLoginOff(t *testing.T) {
	e, o, ctx := ssoEnv(t, time.Hour, nil)
	if resp := loginPost(t, e.web.URL, e.user.Email, e.user.Password); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("with password sign-in on, POST /login: %d, want 303", resp.StatusCode)
	}
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	off := o.provider(time.Hour, func(c *oidclogin.Config) { c.PasswordLogin = false })(e.st, log)
	srv, err := New(t.Context(), Config{DataDir: t.TempDir()}, Deps{Store: e.st, Supervisor: e.sup, Hub: hub.New(), Log: log, SSO: off})
	if err != nil {
		t.Fatal(err)
	}
	web := httptest.NewServer(srv.Handler())
	t.Cleanup(web.Close)
	var forms int
	step(t, ctx, "the login page",
		chromedp.Navigate(web.URL+"/login"), chromedp.WaitVisible(`#sso-login`, chromedp.ByID),
		chromedp.Evaluate(`document.querySelectorAll('form[action="/login"], #password').length`, &forms))
	if forms != 0 {
		t.Errorf("the login page still has the password form (%d elements)", forms)
	}
	resp := loginPost(t, web.URL, e.user.Email, e.user.Password)
	signedIn := strings.Contains(strings.Join(resp.Header["Set-Cookie"], "\n"), sessionCookie+"=")
	if resp.StatusCode != http.StatusForbidden || signedIn {
		t.Errorf("POST /login with the right password: %d %v, want 403 and no sign-in", resp.StatusCode, resp.Header["Set-Cookie"])
	}
}

// loginPost posts the login form as a browser would, with its form token.
func loginPost(t *testing.T, base, email, password string) *http.Response {
	t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	form := url.Values{"email": {email}, "password": {password}, csrfField: {"form-token-form-token-form-token-form-tok"}}
	req, _ := http.NewRequest("POST", base+"/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(&http.Cookie{Name: loginCookie, Value: form.Get(csrfField)})
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}
