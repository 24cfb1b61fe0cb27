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

// TestBrowserLongStreamKeepsUp streams a reply of thousands of deltas: the
// open page's live block must hold the whole streamed text, in order,
// before the completed message replaces it (the deltas are gathered per
// socket write and per animation frame, not swapped one by one).
func TestBrowserLongStreamKeepsUp(t *testing.T) {
	const chunks = 3000
	var b strings.Builder
	for i := range chunks {
		fmt.Fprintf(&b, "w%d ", i)
	}
	text := strings.TrimSpace(b.String())
	e := newEnv(t, fakeapi.Scenario{{Text: text, Chunks: chunks}}, envOptions{quiet: true})
	ctx := e.browser(t)
	// Record the longest text the live block ever held, before the
	// completed message replaces it.
	watch := chromedp.Evaluate(fmt.Sprintf(`window.__maxLive = 0; window.__outOfOrder = false; new MutationObserver(function () {
		var b = document.querySelector('#events .live .body');
		if (!b) return;
		window.__maxLive = Math.max(window.__maxLive, b.textContent.length);
		if (!%q.startsWith(b.textContent)) window.__outOfOrder = true;
	}).observe(document.getElementById('events'), {subtree: true, childList: true, characterData: true}); true`, text), nil)
	startSession(t, ctx, e.web.URL, "stream a lot", watch)
	step(t, ctx, "the completed message replaces the live block",
		chromedp.WaitVisible(`#events .turn-result`, chromedp.ByQuery),
		chromedp.Poll(`document.querySelectorAll('#events .assistant.live').length === 0`, nil))
	var maxLive int
	var outOfOrder bool
	step(t, ctx, "read what the live block held", chromedp.Evaluate(`window.__maxLive`, &maxLive),
		chromedp.Evaluate(`window.__outOfOrder`, &outOfOrder))
	// The last deltas may share a message with the completed text, which
	// htmx applies in one go; most of the stream must have shown live.
	if maxLive < len(text)/2 || outOfOrder {
		t.Errorf("the live block held at most %d characters of the %d streamed (out of order: %v)", maxLive, len(text), outOfOrder)
	}
	live := readTranscript(t, ctx, "read the transcript")
	if n := strings.Count(live.Text, "w2999"); n != 1 {
		t.Errorf("the end of the reply appears %d times", n)
	}
	var seq, url string
	step(t, ctx, "read the page's last seq", chromedp.AttributeValue(`#last-seq`, "data-seq", &seq, nil, chromedp.ByID),
		chromedp.Location(&url))
	if last, _ := e.st.LastSeq(t.Context(), url[strings.LastIndex(url, "/")+1:]); seq != fmt.Sprint(last) {
		t.Errorf("the page's last seq is %s, the log's %d", seq, last)
	}
}

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
