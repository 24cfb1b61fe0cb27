package server

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestReachConfirmPageInChromium: an e-mail's one-click link opened in a
// real browser, signed out: the confirm page shows the ask, its button
// answers, the model gets the answer. The page keeps its token from other
// origins' Referer, but its own form's POST must still pass the server's
// Origin check: with Referrer-Policy no-referrer a browser sends
// "Origin: null" on that POST and Parley refused it (403).
func TestReachConfirmPageInChromium(t *testing.T) {
	e := newEnv(t, colourScenario(), envOptions{reach: true, quiet: true})
	e.subscribe(e.user, "phone")
	sess := e.newSession()
	w := e.dial(sess.ID, 0)
	w.prompt("pick a colour")
	_, m := e.nextPush(60 * time.Second)
	ctx := browser(t)
	var shown, result string
	step(t, ctx, "open the link",
		chromedp.Navigate(e.web.URL+"/reach/a/"+m.Token+"?action=choice:1"),
		chromedp.Text("main", &shown, chromedp.ByQuery),
	)
	step(t, ctx, "confirm", chromedp.Click(`main form button[type="submit"]`, chromedp.ByQuery))
	step(t, ctx, "read the outcome",
		chromedp.Sleep(1500*time.Millisecond),
		chromedp.Poll(`location.pathname.startsWith("/reach/a/") && document.readyState === "complete" && !document.querySelector("main form")`, nil,
			chromedp.WithPollingTimeout(20*time.Second)),
		chromedp.Text("body", &result, chromedp.ByQuery),
	)
	if !strings.Contains(shown, "Which colour?") || !strings.Contains(shown, "Green") {
		t.Errorf("the confirm page shows %q, want the question and Green", shown)
	}
	if !strings.Contains(result, "Answered.") {
		t.Fatalf("after the button the page says %q, want Answered.", result)
	}
	w.waitFor(60*time.Second, "Green it is.")
	e.wantModelGot("User selected: Green")
}
