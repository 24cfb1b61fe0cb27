package server

import (
	"context"
	"slices"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"

	"parley/runner/fakeapi"
)

// TestBrowserReportsWhoIsLooking: static/app.js tells the server over the
// page's own socket whether the page is visible, so reach never pushes to
// someone looking at the ask and never mistakes an open socket for a
// looker. The session page counts as looking while it is on screen, stops
// when its window is minimised (visibilitychange) and counts again when it
// is back; its 20 s heartbeat keeps the report alive past the server's
// 45 s expiry; the inbox page counts for every session of the project.
func TestBrowserReportsWhoIsLooking(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{reach: true, quiet: true})
	sess := e.newSession()
	ctx := e.browser(t)
	step(t, ctx, "open the session page",
		chromedp.Navigate(e.web.URL+"/sessions/"+sess.ID),
		chromedp.WaitVisible(`#conn[data-state="live"]`, chromedp.ByQuery),
	)
	e.waitLooking(sess.ID, true, "the session page on screen")
	setWindow(t, ctx, cdpbrowser.WindowStateMinimized)
	e.waitLooking(sess.ID, false, "the window minimised")
	setWindow(t, ctx, cdpbrowser.WindowStateNormal)
	e.waitLooking(sess.ID, true, "the window back")
	if !testing.Short() {
		time.Sleep(50 * time.Second) // past LookingFor (45 s): only the heartbeat keeps it
		e.waitLooking(sess.ID, true, "50 s later, on screen")
	}

	other := e.newSession() // the inbox shows every session of the project
	step(t, ctx, "open the inbox",
		chromedp.Navigate(e.web.URL+"/inbox"),
		chromedp.WaitVisible(`section.inbox`, chromedp.ByQuery),
	)
	e.waitLooking(other.ID, true, "the inbox on screen")
	setWindow(t, ctx, cdpbrowser.WindowStateMinimized)
	e.waitLooking(other.ID, false, "the inbox minimised")
}

// waitLooking waits until the env's member counts (or no longer counts)
// as looking at the session.
func (e *env) waitLooking(sessionID string, want bool, when string) {
	e.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		ids, err := e.st.LookingAt(e.t.Context(), e.project.ID, sessionID, []int64{e.user.ID})
		if err != nil {
			e.t.Fatal(err)
		}
		if got := slices.Contains(ids, e.user.ID); got == want {
			return
		} else if time.Now().After(deadline) {
			e.t.Fatalf("%s: looking = %v after 15 s, want %v", when, got, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// setWindow minimises or restores the tab's window: headless Chromium
// makes a minimised page hidden (document.visibilityState) and fires
// visibilitychange, as a phone does when its screen goes off.
func setWindow(t testing.TB, ctx context.Context, state cdpbrowser.WindowState) {
	t.Helper()
	step(t, ctx, "window "+string(state), chromedp.ActionFunc(func(ctx context.Context) error {
		w, _, err := cdpbrowser.GetWindowForTarget().WithTargetID(chromedp.FromContext(ctx).Target.TargetID).Do(ctx)
		if err != nil {
			return err
		}
		return cdpbrowser.SetWindowBounds(w, &cdpbrowser.Bounds{WindowState: state}).Do(ctx)
	}))
}
