package server

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"parley/oidclogin"
)

// runChecks runs the re-checks of the env's provider sign-ins, as serve
// does, until the test ends.
func runChecks(t *testing.T, e *env) {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.srv.sso.Run(ctx) }()
	t.Cleanup(func() { stop(); <-done })
}

// waitSignedOut polls the page until the browser is signed out, failing
// after within.
func waitSignedOut(t *testing.T, e *env, ctx context.Context, within time.Duration, what string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for signedInAs(t, e, ctx) != "" {
		if time.Now().After(deadline) {
			t.Fatalf("still signed in %s after %s", within, what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestOIDCAdminGroup: a member of the admin group is an admin; when the
// provider takes them out of it the next re-check takes the flag away and
// ends the sign-in. An admin made by hand keeps the flag.
func TestOIDCAdminGroup(t *testing.T) {
	e, o, ctx := ssoEnv(t, time.Second, nil)
	runChecks(t, e)
	o.setGroups("alice", "eng", "admins")
	opSignIn(t, e, ctx, "alice")
	if who := signedInAs(t, e, ctx); who != "alice@example.com" {
		t.Fatalf("signed in as %q", who)
	}
	u, _ := e.st.UserByEmail(t.Context(), "alice@example.com")
	if !u.IsAdmin {
		t.Fatal("a member of the admin group is no admin")
	}
	o.setGroups("alice", "eng")
	waitSignedOut(t, e, ctx, 5*time.Second, "the provider took alice out of admins (refresh 1 s)")
	if u, _ = e.st.UserByEmail(t.Context(), "alice@example.com"); u.IsAdmin {
		t.Error("still an admin after leaving the admin group")
	}

	// An admin by hand who signs in through the provider without the group.
	hand := e.addUser("mallory@example.com", "Mallory", true)
	o.addUser("mal", "mallory@example.com", "eng")
	opSignIn(t, e, ctx, "mal")
	if who := signedInAs(t, e, ctx); who != "mallory@example.com" {
		t.Fatalf("signed in as %q, want mallory@example.com (linked by e-mail)", who)
	}
	if u, _ := e.st.UserByEmail(t.Context(), hand.Email); !u.IsAdmin || u.ID != hand.ID {
		t.Errorf("the hand-made admin = %+v, want the same account, still admin", u)
	}
}

// TestOIDCRemovedAtProviderEndsSignIn: a person the provider no longer
// knows cannot refresh: the next re-check ends the sign-in.
func TestOIDCRemovedAtProviderEndsSignIn(t *testing.T) {
	e, o, ctx := ssoEnv(t, time.Second, nil)
	runChecks(t, e)
	opSignIn(t, e, ctx, "alice")
	if who := signedInAs(t, e, ctx); who != "alice@example.com" {
		t.Fatalf("signed in as %q", who)
	}
	o.set(func(o *testOP) { delete(o.users, "alice") })
	waitSignedOut(t, e, ctx, 5*time.Second, "the provider deleted alice (refresh 1 s)")
}

// TestOIDCEmailFromUserinfo: a provider that keeps the e-mail out of the
// ID token (zitadel's default) still signs people in: Parley reads the
// e-mail from the userinfo endpoint, for the ID token's subject.
func TestOIDCEmailFromUserinfo(t *testing.T) {
	e, o, ctx := ssoEnv(t, time.Hour, nil)
	o.set(func(o *testOP) { o.lean = true })
	opSignIn(t, e, ctx, "alice")
	if who := signedInAs(t, e, ctx); who != "alice@example.com" {
		t.Fatalf("signed in as %q, want alice@example.com", who)
	}
}

// TestOIDCRolesFromGroups: of several groups naming one project the
// highest role wins, and a membership given by hand is left alone by
// groups that grant nothing there.
func TestOIDCRolesFromGroups(t *testing.T) {
	e, o, ctx := ssoEnv(t, time.Hour, func(c *oidclogin.Config) {
		c.Grants = []oidclogin.Grant{{Group: "eng", Project: "Test project", Role: roleMember},
			{Group: "leads", Project: "1", Role: roleOwner}} // by id: the env's project, the first made
	})
	o.setGroups("alice", "eng", "leads")
	opSignIn(t, e, ctx, "alice")
	u, err := e.st.UserByEmail(t.Context(), "alice@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if a, _ := e.st.ProjectAccess(t.Context(), e.project.ID, u.ID); a.Role != roleOwner {
		t.Errorf("alice (eng and leads) has role %q, want owner", a.Role)
	}
	// The env's member, made by hand, signs in through the provider with no group.
	o.addUser("you", e.user.Email)
	step(t, ctx, "sign out", chromedp.ActionFunc(func(ctx context.Context) error {
		return network.ClearBrowserCookies().Do(ctx)
	}))
	opSignIn(t, e, ctx, "you")
	if who := signedInAs(t, e, ctx); who != e.user.Email {
		t.Fatalf("signed in as %q, want %s", who, e.user.Email)
	}
	if a, _ := e.st.ProjectAccess(t.Context(), e.project.ID, e.user.ID); a.Role != roleMember {
		t.Errorf("the member by hand has role %q after signing in with no group, want member still", a.Role)
	}
}
