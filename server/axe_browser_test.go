package server

import (
	"context"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"parley/accounts"
	"parley/runner/fakeapi"
)

// axePage is a page the axe-core check visits: its path and an element
// that shows it has rendered.
type axePage struct {
	name, path, ready string
}

// visitAndCheck opens each page, runs axe-core on it in both themes and
// tabs through its first controls, each of which must show a focus ring.
func visitAndCheck(t *testing.T, ctx context.Context, base string, pages []axePage) {
	t.Helper()
	for _, p := range pages {
		step(t, ctx, "open "+p.name,
			chromedp.Navigate(base+p.path),
			chromedp.WaitVisible(p.ready, chromedp.ByQuery),
		)
		checkAxe(t, ctx, p.name)
		checkFocusRings(t, ctx, p.name, 30)
	}
}

// TestBrowserAxeEveryPage runs axe-core (WCAG 2 A and AA) over every page
// but the session's (TestBrowserAxeSessionPage), signed out and signed in
// as an admin who owns the project, in the light and the dark theme.
func TestBrowserAxeEveryPage(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "Done."}}, envOptions{quiet: true, reach: true})
	admin := e.addUser("ada@example.com", "Ada", true)
	if err := e.st.SetMember(t.Context(), e.project.ID, admin.ID, roleOwner); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	inv, err := e.srv.accounts().Invite(ctx, accounts.Invitation{Email: "new@example.com", ProjectID: e.project.ID, Role: roleMember}, e.web.URL)
	if err != nil {
		t.Fatal(err)
	}
	reset, _, err := e.srv.accounts().SendReset(ctx, e.user.ID, admin.ID, e.web.URL)
	if err != nil {
		t.Fatal(err)
	}
	if resp := e.postAs(admin, "/tokens", url.Values{"name": {"ci"}}); resp.StatusCode >= 400 {
		t.Fatalf("create a token: %d", resp.StatusCode)
	}
	s := e.newSession()
	if resp := e.postAs(e.user, "/sessions/"+s.ID+"/rename", url.Values{"title": {"Restyle the button"}}); resp.StatusCode >= 400 {
		t.Fatalf("rename the session: %d", resp.StatusCode)
	}
	pp := "/projects/" + strconv.FormatInt(e.project.ID, 10)

	out := browser(t)
	visitAndCheck(t, out, e.web.URL, []axePage{
		{"login", "/login", "#email"},
		{"invitation", strings.TrimPrefix(inv.URL, e.web.URL), "form"},
		{"password reset", strings.TrimPrefix(reset.URL, e.web.URL), "form"},
		{"error (used link)", "/invite/not-a-token", ".error-page"},
	})

	in := browser(t)
	e.signInBrowser(t, in, admin)
	visitAndCheck(t, in, e.web.URL, []axePage{
		{"home", "/", "main"},
		{"project", pp, "#new-prompt"},
		{"settings (every section)", pp + "/settings", ".settings:has(#reach-settings-form):has(#retention-form)"},
		{"history", pp + "/history", ".search"},
		{"history search", pp + "/history?q=button", ".search"},
		{"inbox", "/inbox", "main"},
		{"notifications", "/notifications", ".notifications"},
		{"account", "/account", "main"},
		{"tokens", "/tokens", "main"},
		{"admin", "/admin/users", "main"},
		{"audit", "/audit", ".audit"},
		{"error (not found)", "/projects/999999", ".error-page"},
	})
}
