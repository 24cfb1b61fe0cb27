package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cdlog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"parley/runner/fakeapi"
)

// cspWatch collects every Content-Security-Policy violation the browser
// reports, on every page: the console's security messages and the DOM's
// securitypolicyviolation events (a listener added by DevTools, which the
// page's CSP does not govern).
type cspWatch struct {
	mu   sync.Mutex
	seen []string
}

func watchCSP(t *testing.T, ctx context.Context) *cspWatch {
	t.Helper()
	w := &cspWatch{}
	chromedp.ListenTarget(ctx, func(ev any) {
		var msg string
		switch ev := ev.(type) {
		case *cdlog.EventEntryAdded:
			if strings.Contains(ev.Entry.Text, "Content Security Policy") {
				msg = ev.Entry.Text
			}
		case *runtime.EventConsoleAPICalled:
			for _, a := range ev.Args {
				if s := string(a.Value); strings.Contains(s, "csp-violation") {
					msg = s
				}
			}
		}
		if msg != "" {
			w.mu.Lock()
			w.seen = append(w.seen, msg)
			w.mu.Unlock()
		}
	})
	step(t, ctx, "listen for CSP violations", cdlog.Enable(), runtime.Enable(),
		chromedp.ActionFunc(func(ctx context.Context) error {
			_, err := page.AddScriptToEvaluateOnNewDocument(`document.addEventListener("securitypolicyviolation",
				e => console.error("csp-violation " + e.violatedDirective + " " + e.blockedURI));`).Do(ctx)
			return err
		}))
	return w
}

func (w *cspWatch) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.seen
	w.seen = nil
	return s
}

// The pages work under the CSP with no violation, the session page shows
// its place in line for a free slot and updates when the line moves, and a
// markdown image from the model is a link, never fetched.
func TestBrowserPagesWorkUnderCSPAndShowTheQueue(t *testing.T) {
	hold := make(chan struct{})
	e := newEnv(t, fakeapi.Scenario{
		{Text: "A is working", Hold: hold},
		{Text: "Here is the chart: ![the chart](https://evil.example/chart.png?leak=1)"},
	}, envOptions{quiet: true, maxRuns: 1})
	a := e.newSession()
	wa := e.dial(a.ID, 0)
	wa.prompt("task A")
	wa.waitFor(60*time.Second, "A is working")

	ctx := e.browser(t)
	csp := watchCSP(t, ctx)
	// The watch sees a violation when there is one: an image from elsewhere.
	var ok bool
	step(t, ctx, "provoke a violation",
		chromedp.Navigate(e.web.URL+"/"),
		chromedp.WaitVisible(`#new-prompt`, chromedp.ByID),
		chromedp.Evaluate(`document.body.insertAdjacentHTML("beforeend", '<img src="https://evil.example/probe.png">'); true`, &ok),
		chromedp.Poll(`document.querySelector('img[src*="probe"]') !== null`, nil),
	)
	waitViolation(t, csp)

	var png []byte
	step(t, ctx, "start a session while the only slot is taken",
		chromedp.Navigate(e.web.URL+"/"),
		chromedp.WaitVisible(`#new-prompt`, chromedp.ByID),
		chromedp.SendKeys(`#new-prompt`, "show me the chart", chromedp.ByID),
		chromedp.Submit(`#new-prompt`, chromedp.ByID),
		chromedp.WaitVisible(`#slot-queue`, chromedp.ByID),
		chromedp.Poll(`document.getElementById("slot-queue").innerText.includes("Waiting for a free slot, 1st in line")`, nil),
		chromedp.CaptureScreenshot(&png),
	)
	_ = os.WriteFile(filepath.Join(artefactDir(t), "slot-queue.png"), png, 0o644)
	close(hold) // A's turn ends and its slot goes to this session
	var imgs, links int
	step(t, ctx, "the queued message is answered",
		chromedp.Poll(`document.getElementById("events").innerText.includes("Here is the chart")`, nil),
		// The streamed text shows first; the completed message replaces it.
		chromedp.Poll(`document.querySelector("#events .turn-result") !== null && document.querySelector("#events .live") === null`, nil),
		chromedp.WaitNotVisible(`#slot-queue`, chromedp.ByID),
		chromedp.Evaluate(`document.querySelectorAll("#events img").length`, &imgs),
		chromedp.Evaluate(`document.querySelectorAll('#events a[href^="https://evil.example/chart.png"]').length`, &links),
	)
	if imgs != 0 || links != 1 {
		t.Errorf("the model's image: %d <img> and %d links in the transcript; want 0 and 1", imgs, links)
	}
	for _, p := range []string{"/inbox", "/projects/" + pid(e) + "/history", "/sessions/" + a.ID} {
		step(t, ctx, "open "+p, chromedp.Navigate(e.web.URL+p), chromedp.WaitVisible(`main`, chromedp.ByQuery))
	}
	step(t, ctx, "sign out and see the login page", chromedp.Click(`form.logout button`, chromedp.ByQuery),
		chromedp.WaitVisible(`input[name="password"]`, chromedp.ByQuery))
	if v := csp.take(); len(v) != 0 {
		t.Errorf("CSP violations on Parley's own pages:\n%s", strings.Join(v, "\n"))
	}
}

func waitViolation(t *testing.T, w *cspWatch) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if v := w.take(); len(v) > 0 {
			return
		}
		time.Sleep(50 * time.Millisecond) // a test waiting on the browser's event stream
	}
	t.Fatal(fmt.Errorf("the CSP watch saw no violation for an image from another host"))
}
