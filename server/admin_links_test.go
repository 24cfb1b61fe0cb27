package server

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"parley/audit"
	"parley/runner/fakeapi"
	"parley/store"
)

var newLinkURL = regexp.MustCompile(`id="new-link-url">([^<]+)<`)

// linkPathOf is the path of the link a page just showed to copy.
func (e *env) linkPathOf(resp *http.Response) string {
	e.t.Helper()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("making a link: status %d:\n%s", resp.StatusCode, b)
	}
	m := newLinkURL.FindStringSubmatch(string(b))
	if m == nil {
		e.t.Fatalf("the page shows no link:\n%s", b)
	}
	u, err := url.Parse(m[1])
	if err != nil {
		e.t.Fatal(err)
	}
	return u.Path
}

// linkForm is a signed-out browser holding a link's form.
type linkForm struct {
	e    *env
	c    *http.Client
	path string
	csrf string
}

// openLink opens the link at path in a new signed-out browser; it returns
// the page's status and body.
func (e *env) openLink(path string) (*linkForm, int, string) {
	e.t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(e.web.URL + path)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	f := &linkForm{e: e, c: c, path: path}
	if m := csrfInput.FindStringSubmatch(string(b)); m != nil {
		f.csrf = m[1]
	}
	return f, resp.StatusCode, string(b)
}

// post sends the form; it returns the response (body read) and its body.
func (f *linkForm) post(form url.Values) (*http.Response, string) {
	f.e.t.Helper()
	form.Set(csrfField, f.csrf)
	resp, err := f.c.PostForm(f.e.web.URL+f.path, form)
	if err != nil {
		f.e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// signInCookie is the sign-in cookie a response set ("" = none).
func signInCookie(resp *http.Response) string {
	for _, c := range resp.Cookies() {
		if c.Name == sessionCookie && c.MaxAge >= 0 {
			return c.Value
		}
	}
	return ""
}

// TestInvitationOnce: an admin invites an e-mail on the users page and
// gets a link to copy; opened in two browsers, the first to post makes
// the account and is signed in, the second is told the invitation was
// used (410), and so is anyone opening it after. The invitation is in the
// audit trail.
func TestInvitationOnce(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true})
	admin := e.addUser("ada@example.com", "Ada", true)
	path := e.linkPathOf(e.postAs(admin, "/admin/users/invite", url.Values{"email": {"nina@example.com"}}))
	if !strings.HasPrefix(path, "/invite/") {
		t.Fatalf("invitation link %q", path)
	}
	if page := e.getAs(admin, "/admin/users"); !strings.Contains(page, "nina@example.com") {
		t.Errorf("the users page does not list the pending invitation:\n%s", page)
	}
	first, st1, page := e.openLink(path)
	second, st2, _ := e.openLink(path)
	if st1 != 200 || st2 != 200 || !strings.Contains(page, "nina@example.com") {
		t.Fatalf("opening the invitation: %d, %d:\n%s", st1, st2, page)
	}
	resp, body := first.post(url.Values{"name": {"Nina New"}, "password": {"nina's password"}})
	if resp.StatusCode != http.StatusSeeOther || signInCookie(resp) == "" {
		t.Fatalf("accepting: status %d, cookie %q:\n%s", resp.StatusCode, signInCookie(resp), body)
	}
	nina := &testUser{Email: "nina@example.com", Cookie: signInCookie(resp)}
	if page := e.getAs(nina, "/account"); !strings.Contains(page, "Nina New") {
		t.Errorf("the new account's page:\n%s", page)
	}
	resp, body = second.post(url.Values{"name": {"Mallory"}, "password": {"mallory's password"}})
	if resp.StatusCode != http.StatusGone || !strings.Contains(body, "used already") {
		t.Errorf("a second use: status %d:\n%s", resp.StatusCode, body)
	}
	if _, st, body := e.openLink(path); st != http.StatusGone || !strings.Contains(body, "used already") {
		t.Errorf("opening a used invitation: status %d:\n%s", st, body)
	}
	if u, err := e.st.UserByEmail(t.Context(), "nina@example.com"); err != nil || u.Name != "Nina New" {
		t.Errorf("the account: %+v, %v", u, err)
	}
	if rows := e.waitAudit(audit.Invite, 1); rows[0].Target != "nina@example.com" || rows[0].ActorID != admin.ID {
		t.Errorf("audit row %+v", rows[0])
	}
}

// TestInvitationExpired: an invitation past its time is refused with a
// sentence, whether opened or posted from a form opened before; no
// account is made.
func TestInvitationExpired(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true})
	admin := e.addUser("ada@example.com", "Ada", true)
	path := e.linkPathOf(e.postAs(admin, "/admin/users/invite", url.Values{"email": {"late@example.com"}}))
	form, st, _ := e.openLink(path)
	if st != 200 {
		t.Fatalf("opening the invitation: %d", st)
	}
	e.expireLinks()
	if _, st, body := e.openLink(path); st != http.StatusGone || !strings.Contains(body, "expired") {
		t.Errorf("opening an expired invitation: status %d:\n%s", st, body)
	}
	resp, body := form.post(url.Values{"name": {"Late"}, "password": {"late password"}})
	if resp.StatusCode != http.StatusGone || !strings.Contains(body, "expired") {
		t.Errorf("posting an expired invitation: status %d:\n%s", resp.StatusCode, body)
	}
	if _, err := e.st.UserByEmail(t.Context(), "late@example.com"); err == nil {
		t.Error("an expired invitation made an account")
	}
}

// expireLinks puts every account link's expiry in the past.
func (e *env) expireLinks() {
	e.t.Helper()
	conn, err := pgx.Connect(e.t.Context(), e.dbURL)
	if err != nil {
		e.t.Fatal(err)
	}
	defer conn.Close(e.t.Context())
	if _, err := conn.Exec(e.t.Context(), `UPDATE account_links SET expires_at = now() - interval '1 second'`); err != nil {
		e.t.Fatal(err)
	}
}

// TestInviteFromProjectSettings: an owner adds an e-mail without an
// account on the settings page; the invitation it shows makes the account
// a viewer of the project and opens the project.
func TestInviteFromProjectSettings(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true})
	owner := e.member("olga@example.com", "Olga", roleOwner)
	pp := "/projects/" + strconv.FormatInt(e.project.ID, 10)
	path := e.linkPathOf(e.postAs(owner, pp+"/settings/members", url.Values{"email": {"vic@example.com"}, "role": {roleViewer}}))
	form, st, _ := e.openLink(path)
	if st != 200 {
		t.Fatalf("opening the invitation: %d", st)
	}
	resp, body := form.post(url.Values{"name": {"Vic"}, "password": {"vic's password"}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != pp {
		t.Fatalf("accepting: status %d, to %q:\n%s", resp.StatusCode, resp.Header.Get("Location"), body)
	}
	u, err := e.st.UserByEmail(t.Context(), "vic@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if role, err := e.st.MemberRole(t.Context(), e.project.ID, u.ID); err != nil || role != roleViewer {
		t.Errorf("role %q, %v; want viewer", role, err)
	}
}

// TestPasswordReset: an admin sends a reset link; until it is used the
// old password works; using it sets the new one, ends the old sign-ins
// and signs this browser in; it works once.
func TestPasswordReset(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true})
	admin := e.addUser("ada@example.com", "Ada", true)
	bob := e.member("bob@example.com", "Bob", roleMember)
	path := e.linkPathOf(e.postAs(admin, "/admin/users/"+strconv.FormatInt(bob.ID, 10)+"/reset", nil))
	form, st, _ := e.openLink(path)
	if st != 200 {
		t.Fatalf("opening the reset link: %d", st)
	}
	resp, body := form.post(url.Values{"password": {"short"}})
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "too short") {
		t.Errorf("a short password: status %d:\n%s", resp.StatusCode, body)
	}
	resp, body = form.post(url.Values{"password": {"bob's new password"}})
	if resp.StatusCode != http.StatusSeeOther || signInCookie(resp) == "" {
		t.Fatalf("resetting: status %d:\n%s", resp.StatusCode, body)
	}
	if resp := e.do(bob, "GET", "/inbox", nil); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("bob's old sign-in after the reset: status %d, want 303 to the login page", resp.StatusCode)
	}
	bob.Password = "bob's new password"
	e.login(bob)
	if _, st, body := e.openLink(path); st != http.StatusGone || !strings.Contains(body, "used already") {
		t.Errorf("opening a used reset link: status %d:\n%s", st, body)
	}
	if _, err := e.st.AccountLinkByToken(t.Context(), store.LinkReset, []byte("nothing")); err == nil {
		t.Error("an unknown link is found")
	}
}
