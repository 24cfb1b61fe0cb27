package server

import (
	"strconv"
	"testing"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"parley/runner/fakeapi"
)

// TestBrowserHeaderCounterDoesNotScroll: a long page (a project's
// settings, on a phone) stays where its reader is when the header's inbox
// counter gets a frame on its own socket. The page script kept "the newest
// event in view" on every socket's message, so the counter's first frame
// (and every later one) threw each page to its bottom: in CI,
// TestBrowserHeaderOnPhone found Sign out 5,297 px above the viewport.
func TestBrowserHeaderCounterDoesNotScroll(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "Done."}}, envOptions{quiet: true})
	owner := e.member("owner@example.com", "Olga Owner", roleOwner)
	ctx := browser(t)
	e.signInBrowser(t, ctx, owner)
	var y float64
	var tall int
	step(t, ctx, "a long page on a phone, its counter's first frame",
		chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile),
		chromedp.Navigate(e.web.URL+"/projects/"+strconv.FormatInt(e.project.ID, 10)+"/settings"),
		chromedp.Poll(`document.getElementById("inbox-count") && document.getElementById("inbox-count").hasAttribute("data-url")`, nil),
		chromedp.Evaluate(`new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))`, nil,
			func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }),
		chromedp.Evaluate(`document.documentElement.scrollHeight`, &tall),
		chromedp.Evaluate(`window.scrollY`, &y),
	)
	if tall <= 844 {
		t.Fatalf("the settings page is %d px tall: too short to show a scroll", tall)
	}
	if y != 0 {
		t.Errorf("the page scrolled to %v px of %d when the header's counter got its frame; want 0", y, tall)
	}
}
