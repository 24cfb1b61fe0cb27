package server

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"parley/runner/fakeapi"
)

// TestInvitationAcceptedInChromium: an invitation link opened in a real,
// signed-out browser; its form's POST passes the server's Origin check
// and makes the account. With Referrer-Policy no-referrer on the link's
// page, Chromium sent "Origin: null" on that POST and Parley answered 403
// "it did not come from a Parley page" (the Go-client tests send no
// Origin, so they passed). The reset link's page is the same page.
func TestInvitationAcceptedInChromium(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true})
	admin := e.addUser("ada@example.com", "Ada", true)
	path := e.linkPathOf(e.postAs(admin, "/admin/users/invite", url.Values{"email": {"nina@example.com"}}))
	ctx := browser(t)
	var body string
	step(t, ctx, "fill the invitation",
		chromedp.Navigate(e.web.URL+path),
		chromedp.SendKeys(`input[name="name"]`, "Nina", chromedp.ByQuery),
		chromedp.SendKeys(`input[name="password"]`, "nina's long password", chromedp.ByQuery))
	step(t, ctx, "accept", chromedp.Submit(`input[name="password"]`, chromedp.ByQuery))
	step(t, ctx, "read the page", chromedp.Sleep(1500*time.Millisecond), chromedp.Text("body", &body, chromedp.ByQuery))
	if strings.Contains(body, "refused") {
		t.Fatalf("accepting the invitation in Chromium: %q", body)
	}
	if u, err := e.st.UserByEmail(t.Context(), "nina@example.com"); err != nil || u.Name != "Nina" {
		t.Errorf("the account after accepting: %+v, %v (page %q)", u, err, body)
	}
}
