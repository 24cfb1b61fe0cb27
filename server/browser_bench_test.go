//go:build bench

package server

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"parley/runner/fakeapi"
)

// BenchmarkBrowserLongStream streams a 10,000-delta reply to a page open
// in Chromium and times, from the fake model sending the last delta, when
// the page shows the end of the reply (the goal: within 2 s) and
// when the completed message has replaced the live block. Both are read
// in the page (Date.now() in a MutationObserver) against the model's own
// clock, the same machine's. The model sends the whole reply at once, so
// most of that time is the CLI working through it: when the CLI's result
// was recorded is a figure too.
func BenchmarkBrowserLongStream(b *testing.B) {
	chunks := benchInt("PARLEY_BENCH_DELTAS", 10000)
	var mu sync.Mutex
	var lastSent time.Time
	e := newEnv(b, fakeapi.Scenario{{Text: words(chunks), Chunks: chunks, Sent: func(i int, at time.Time) {
		if i == chunks-1 {
			mu.Lock()
			lastSent = at
			mu.Unlock()
		}
	}}}, envOptions{quiet: true})
	ctx := e.browser(b)
	watch := chromedp.Evaluate(fmt.Sprintf(`window.__endShown = 0; window.__done = 0; new MutationObserver(function () {
		var ev = document.getElementById('events');
		if (!window.__endShown && ev.textContent.indexOf(%q) >= 0) window.__endShown = Date.now();
		if (!window.__done && ev.querySelector('.turn-result') && !ev.querySelector('.assistant.live')) window.__done = Date.now();
	}).observe(document.getElementById('events'), {subtree: true, childList: true, characterData: true}); true`,
		fmt.Sprintf("w%d", chunks-1)), nil)
	startSession(b, ctx, e.web.URL, "stream a lot", watch)
	var endShown, done float64
	var url string
	step(b, ctx, "wait for the completed message",
		chromedp.Poll(`window.__done > 0`, nil),
		chromedp.Evaluate(`window.__endShown`, &endShown), chromedp.Evaluate(`window.__done`, &done), chromedp.Location(&url))
	evs, err := e.st.EventsAfter(b.Context(), url[strings.LastIndex(url, "/")+1:], 0, 0)
	if err != nil {
		b.Fatal(err)
	}
	var result float64 // when the CLI's result was recorded
	for _, ev := range evs {
		if ev.Type == "result" {
			result = float64(ev.CreatedAt.UnixNano()) / 1e6
		}
	}
	mu.Lock()
	sent := float64(lastSent.UnixNano()) / 1e6
	mu.Unlock()
	if endShown == 0 || sent == 0 {
		b.Fatalf("the page never showed the end of the reply (%v), or the model sent no last delta", endShown)
	}
	what := fmt.Sprintf("page in Chromium, %d-delta reply: model sent the last delta → ", chunks)
	figure(what+"the page shows it", endShown-sent, "ms")
	figure(what+"the completed message replaced the live block", done-sent, "ms")
	// The part that is the CLI working through what the model sent at once.
	figure(what+"the CLI's result recorded", result-sent, "ms")
}
