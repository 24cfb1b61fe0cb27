package server

import (
	"fmt"
	"strings"
	"testing"

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
