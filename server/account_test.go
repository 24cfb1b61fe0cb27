package server

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"parley/reach/mail"
	"parley/reach/mail/smtptest"
	"parley/runner/fakeapi"
)

// TestAccountPassword: a password change with a wrong current password
// changes nothing; with the right one it sets the new password, ends
// Bob's other sign-in and keeps this browser signed in.
func TestAccountPassword(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true})
	bob := e.member("bob@example.com", "Bob", roleMember)
	other := *bob
	e.login(&other) // Bob's second browser
	resp := e.postAs(bob, "/account/password", url.Values{"current": {"not my password"}, "password": {"a new password"}})
	if b := readBody(resp.Body); resp.StatusCode != http.StatusBadRequest || !strings.Contains(b, "current password is not right") {
		t.Errorf("a wrong current password: status %d:\n%s", resp.StatusCode, b)
	}
	if resp := e.do(&other, "GET", "/inbox", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("Bob's other sign-in after a refused change: status %d", resp.StatusCode)
	}
	e.login(bob) // the old password still works
	resp = e.postAs(bob, "/account/password", url.Values{"current": {testPassword}, "password": {"a new password"}})
	if resp.StatusCode != http.StatusSeeOther || signInCookie(resp) == "" {
		t.Fatalf("changing the password: status %d, cookie %q", resp.StatusCode, signInCookie(resp))
	}
	if resp := e.do(&other, "GET", "/inbox", nil); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("Bob's other sign-in after the change: status %d, want 303 to the login page", resp.StatusCode)
	}
	bob.Cookie = signInCookie(resp)
	if page := e.getAs(bob, "/account?changed=password"); !strings.Contains(page, "Your password is changed") {
		t.Errorf("this browser after the change:\n%s", page)
	}
	bob.Password = "a new password"
	e.login(bob)
}

// TestAccountNameAndSignOutEverywhere: the name changes on the account
// page; signing out everywhere ends every sign-in of the person.
func TestAccountNameAndSignOutEverywhere(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true})
	bob := e.member("bob@example.com", "Bob", roleMember)
	other := *bob
	e.login(&other)
	if resp := e.postAs(bob, "/account/name", url.Values{"name": {"Robert"}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("renaming: status %d", resp.StatusCode)
	}
	page := e.getAs(bob, "/account")
	for _, want := range []string{`value="Robert"`, `href="/tokens"`, `href="/account"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the account page lacks %s:\n%s", want, page)
		}
	}
	if resp := e.postAs(bob, "/account/sign-out-everywhere", nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("signing out everywhere: status %d", resp.StatusCode)
	}
	for _, u := range []*testUser{bob, &other} {
		if resp := e.do(u, "GET", "/inbox", nil); resp.StatusCode != http.StatusSeeOther {
			t.Errorf("a sign-in after signing out everywhere: status %d, want 303", resp.StatusCode)
		}
	}
}

// TestInvitationMailed: with SMTP set up, the invitation is e-mailed (the
// same link the page shows) through a real SMTP server.
func TestInvitationMailed(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true})
	smtp := smtptest.New(t)
	mc, err := mail.ParseURL(smtp.URL())
	if err != nil {
		t.Fatal(err)
	}
	e.srv.cfg.Mail = &mc // before any request reads it
	admin := e.addUser("ada@example.com", "Ada", true)
	resp := e.postAs(admin, "/admin/users/invite", url.Values{"email": {"mia@example.com"}})
	path := e.linkPathOf(resp)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	m, err := smtp.Next(ctx)
	if err != nil {
		t.Fatalf("no mail: %v", err)
	}
	if len(m.To) != 1 || m.To[0] != "mia@example.com" || !strings.Contains(m.Text, path) || !strings.Contains(m.Text, "Ada invites you") {
		t.Errorf("the mail: to %v, subject %q:\n%s", m.To, m.Subject, m.Text)
	}
	uid := strconv.FormatInt(e.user.ID, 10)
	rpath := e.linkPathOf(e.postAs(admin, "/admin/users/"+uid+"/reset", nil))
	if m, err := smtp.Next(ctx); err != nil || !strings.Contains(m.Text, rpath) || m.To[0] != e.user.Email {
		t.Errorf("the reset mail: %v, %+v", err, m)
	}
}
