package server

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"parley/runner/fakeapi"
	"parley/streamjson"
)

// replyWord is a word of the fake model's replies in this test: a letter
// for the reply and its place in it (a0, b17, c123), so the page's text
// and the log's can be compared word by word.
var replyWord = regexp.MustCompile(`\b[a-d]\d+\b`)

// lettered is n words of reply letter l: "l0 l1 … l(n-1)".
func lettered(l string, n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = fmt.Sprintf("%s%d", l, i)
	}
	return strings.Join(ws, " ")
}

// TestBrowserOnceNoReplyShownTwice opens pages on a session at many points
// of a streaming reply — before its first delta, with a tool running,
// while the text flows, just before the result — and after a reply cut
// by claude's death, and compares each page's visible text with the log's
// word by word: no word twice, none missing, in order. The cut reply is
// closed with a cut mark, on the open page and on a reload, and the next
// turn's reply streams into its own block.
func TestBrowserOnceNoReplyShownTwice(t *testing.T) {
	before := make(chan struct{}) // holds the tool-only message before any delta
	end := make(chan struct{})    // holds the long reply after its text, before it stops
	cutAt := make(chan struct{})  // closed when the cut reply is half streamed
	cutGo := make(chan struct{})  // lets the cut reply's stream go on (after the kill)
	var once sync.Once
	t.Cleanup(func() {
		for _, c := range []chan struct{}{before, end, cutGo} {
			select {
			case <-c:
			default:
				close(c)
			}
		}
	})
	e := newEnv(t, fakeapi.Scenario{
		{Text: lettered("a", 40), Chunks: 40, ChunkDelay: 5 * time.Millisecond, ToolName: askTool, ToolInput: colourQuestion(false)},
		{Hold: before, ToolName: "Glob", ToolInput: map[string]any{"pattern": "*.md"}},
		{Text: lettered("b", 300), Chunks: 300, ChunkDelay: 15 * time.Millisecond, Hold: end},
		{Text: lettered("c", 200), Chunks: 200, ChunkDelay: 5 * time.Millisecond, Sent: func(i int, _ time.Time) {
			if i == 100 {
				once.Do(func() { close(cutAt) })
				<-cutGo
			}
		}},
		{Text: lettered("d", 60), Chunks: 60, ChunkDelay: 5 * time.Millisecond},
	}, envOptions{quiet: true})
	s := e.newSession()
	url := e.web.URL + "/sessions/" + s.ID
	first := e.browser(t)
	step(t, first, "open the session", chromedp.Navigate(url), pollLive)
	pages := map[string]context.Context{"the page open from the start": first}
	check := func(when string) {
		t.Helper()
		for _, name := range slices.Sorted(maps.Keys(pages)) {
			e.wantOnce(t, pages[name], s.ID, when+", "+name)
		}
	}
	w := e.dial(s.ID, 0)
	w.prompt("go")

	in := e.waitInput(w, s.ID)
	pages["a page opened with a tool running"] = openPage(t, first, url)
	check("with the ask open")
	w.answer(in, map[string]any{"choice": "Blue"})

	waitUntil(t, 60*time.Second, "the tool-only message to start", func() bool { return e.streamsStarted(s.ID) == 2 })
	pages["a page opened before the first delta"] = openPage(t, first, url)
	check("before the first delta")
	close(before)

	// Pages opened while the text flows: the catch-up and the live deltas
	// meet in the page.
	waitUntil(t, 60*time.Second, "the long reply to stream", func() bool { return e.streamedWords(s.ID, "b") > 20 })
	pages["a page opened mid-text (1)"] = openPage(t, first, url)
	waitUntil(t, 60*time.Second, "the long reply to stream on", func() bool { return e.streamedWords(s.ID, "b") > 120 })
	pages["a page opened mid-text (2)"] = openPage(t, first, url)
	// The CLI prints a text block's last delta with the block's end.
	waitUntil(t, 60*time.Second, "the long reply's text to end", func() bool { return e.streamedWords(s.ID, "b") >= 299 })
	pages["a page opened just before the result"] = openPage(t, first, url)
	check("just before the result")
	close(end)
	w.waitFor(60*time.Second, "turn-result")
	check("after the turn")

	// A reply cut by claude's death.
	w.prompt("again")
	<-cutAt
	waitUntil(t, 60*time.Second, "the cut reply to show", func() bool { return e.streamedWords(s.ID, "c") > 50 })
	var pid int
	e.queryRow(`SELECT pid FROM runs WHERE session_id = $1 AND ended_at IS NULL`, []any{s.ID}, &pid)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill claude (pid %d): %v", pid, err)
	}
	close(cutGo)
	waitUntil(t, 60*time.Second, "the cut run to end", func() bool { return len(e.rawEvents(s.ID, "run_ended")) == 1 })
	pages["a page opened after the cut"] = openPage(t, first, url)
	check("after the cut")
	for _, name := range slices.Sorted(maps.Keys(pages)) {
		e.wantCutClosed(t, pages[name], name)
	}

	// The next turn streams into a block of its own.
	w.prompt("more")
	waitUntil(t, 90*time.Second, "the next turn to end", func() bool { return e.turnsEnded(s.ID) == 2 })
	pages["a page opened after the next turn"] = openPage(t, first, url)
	check("after the next turn")
	for _, name := range slices.Sorted(maps.Keys(pages)) {
		var live int
		step(t, pages[name], name+": count the replies still streaming",
			chromedp.Evaluate(`document.querySelectorAll('#events .assistant.live').length`, &live))
		if live != 0 {
			t.Errorf("after the last turn, %s: %d replies still streaming", name, live)
		}
	}
}

// TestBrowserOnceTeammateJoinsMidReply is the first case alone: a
// teammate opens the session while Claude streams a reply that follows a
// finished one, at several points of it, with no fault at all; each page
// shows each word of both replies once.
func TestBrowserOnceTeammateJoinsMidReply(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{
		{Text: lettered("a", 30), Chunks: 30, ToolName: askTool, ToolInput: colourQuestion(false)},
		{Text: lettered("b", 120), Chunks: 120, ChunkDelay: 25 * time.Millisecond},
	}, envOptions{quiet: true})
	s := e.newSession()
	url := e.web.URL + "/sessions/" + s.ID
	first := e.browser(t)
	w := e.dial(s.ID, 0)
	w.prompt("go")
	w.answer(e.waitInput(w, s.ID), map[string]any{"choice": "Blue"})
	pages := map[string]context.Context{}
	for _, at := range []int{5, 30, 60, 90} {
		waitUntil(t, 60*time.Second, "the reply to stream", func() bool { return e.streamedWords(s.ID, "b") >= at })
		pages[fmt.Sprintf("a page opened at word %d", at)] = openPage(t, first, url)
	}
	w.waitFor(60*time.Second, "turn-result")
	for _, name := range slices.Sorted(maps.Keys(pages)) {
		e.wantOnce(t, pages[name], s.ID, "after the reply, "+name)
	}
}

// pollLive waits for the page's socket to be live. It polls on a timer:
// a tab in the background gets no animation frames.
var pollLive = chromedp.Poll(`document.getElementById('conn').dataset.state === 'live'`, nil,
	chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(60*time.Second))

// openPage opens the session in a new tab of the browser and waits until
// its socket is live.
func openPage(t *testing.T, browser context.Context, url string) context.Context {
	t.Helper()
	tab, cancel := chromedp.NewContext(browser)
	t.Cleanup(cancel)
	// The first Run makes the tab; under a step's deadline it would close
	// with it.
	if err := chromedp.Run(tab); err != nil {
		t.Fatalf("open a tab: %v", err)
	}
	step(t, tab, "open another page on the session", chromedp.Navigate(url), pollLive)
	return tab
}

// wantOnce waits until the page has every event of the log (which holds
// still meanwhile) and compares the reply words it shows with the log's:
// each once, in order.
func (e *env) wantOnce(t *testing.T, tab context.Context, sessionID, what string) {
	t.Helper()
	last, err := e.st.LastSeq(t.Context(), sessionID)
	if err != nil {
		t.Fatal(err)
	}
	var seq int64
	for deadline := time.Now().Add(30 * time.Second); ; {
		step(t, tab, what+": read the page's last seq", page.BringToFront(), chromedp.Evaluate(`+document.getElementById('last-seq').dataset.seq`, &seq))
		if seq >= last {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the page has the log up to seq %d of %d", what, seq, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var text string
	step(t, tab, what+": read the page", page.BringToFront(),
		chromedp.Sleep(300*time.Millisecond), // htmx settles its swaps
		chromedp.Evaluate(`document.getElementById('events').innerText`, &text))
	got := replyWord.FindAllString(text, -1)
	want := e.logWords(sessionID)
	if slices.Equal(got, want) {
		return
	}
	t.Errorf("%s: the page shows %d reply words, the log %d; twice: %s; missing: %s", what, len(got), len(want), brief(twice(got)), brief(missing(got, want)))
}

// wantCutClosed checks that a page shows no reply still streaming and
// marks the cut one.
func (e *env) wantCutClosed(t *testing.T, tab context.Context, what string) {
	t.Helper()
	var live, cut int
	step(t, tab, what+": read the cut reply",
		chromedp.Evaluate(`document.querySelectorAll('#events .assistant.live').length`, &live),
		chromedp.Evaluate(`[...document.querySelectorAll('#events .assistant .cut-mark')].filter(el => el.innerText.trim() !== '').length`, &cut))
	if live != 0 || cut != 1 {
		t.Errorf("%s: %d replies still streaming (want 0), %d visible cut marks (want 1)", what, live, cut)
	}
}

// brief shows a list of words, its first ten and how many.
func brief(words []string) string {
	if len(words) <= 10 {
		return fmt.Sprint(words)
	}
	return fmt.Sprintf("%v… (%d)", words[:10], len(words))
}

// twice lists the words that occur more than once.
func twice(words []string) []string {
	seen := map[string]int{}
	var out []string
	for _, w := range words {
		if seen[w]++; seen[w] == 2 {
			out = append(out, w)
		}
	}
	return out
}

// missing lists the words of want not in got.
func missing(got, want []string) []string {
	var out []string
	for _, w := range want {
		if !slices.Contains(got, w) {
			out = append(out, w)
		}
	}
	return out
}

// logWords is the reply words the log holds, in order: of each top-level
// message, its completed text, else what streamed of it.
func (e *env) logWords(sessionID string) []string {
	e.t.Helper()
	evs, err := e.st.EventsAfter(e.t.Context(), sessionID, 0, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	var order []string
	streamed, completed := map[string]string{}, map[string]string{}
	cur := ""
	for _, ev := range evs {
		switch ev.Type {
		case "stream_event":
			se, ok := streamjson.DecodeStreamEvent(ev.Payload)
			switch {
			case !ok:
			case se.Type == "message_start":
				cur = se.MessageID
				order = append(order, cur)
			case se.IsTextDelta():
				streamed[cur] += se.Text
			}
		case "assistant":
			var a streamjson.MessageLine[streamjson.Message]
			if json.Unmarshal(ev.Payload, &a) != nil || a.ParentToolUseID != nil {
				continue
			}
			if !slices.Contains(order, a.Message.ID) {
				order = append(order, a.Message.ID)
			}
			for _, b := range a.Message.Content {
				if b.Type == "text" {
					completed[a.Message.ID] += b.Text + "\n\n"
				}
			}
		}
	}
	var words []string
	for _, id := range order {
		text, ok := completed[id]
		if !ok {
			text = streamed[id]
		}
		words = append(words, replyWord.FindAllString(text, -1)...)
	}
	return words
}

// streamsStarted counts the top-level messages that began streaming.
func (e *env) streamsStarted(sessionID string) int {
	n := 0
	for _, ev := range e.rawEvents(sessionID, "stream_event") {
		if se, ok := streamjson.DecodeStreamEvent(ev); ok && se.Type == "message_start" {
			n++
		}
	}
	return n
}

// streamedWords counts the words of reply l streamed so far.
func (e *env) streamedWords(sessionID, l string) int {
	var text strings.Builder
	for _, ev := range e.rawEvents(sessionID, "stream_event") {
		if se, ok := streamjson.DecodeStreamEvent(ev); ok && se.IsTextDelta() {
			text.WriteString(se.Text)
		}
	}
	n := 0
	for _, w := range replyWord.FindAllString(text.String(), -1) {
		if strings.HasPrefix(w, l) {
			n++
		}
	}
	return n
}

// turnsEnded counts the result events after the run that was cut.
func (e *env) turnsEnded(sessionID string) int {
	return len(e.rawEvents(sessionID, "result"))
}

func (e *env) rawEvents(sessionID, typ string) [][]byte {
	e.t.Helper()
	evs, err := e.st.EventsAfter(e.t.Context(), sessionID, 0, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	var out [][]byte
	for _, ev := range evs {
		if ev.Type == typ {
			out = append(out, ev.Payload)
		}
	}
	return out
}

// TestReplicaViewerJoinsMidStreamOnce: a viewer on another replica than
// the run's, joining in the middle of a reply, gets every delta once, each
// naming the reply's own block. That replica's publisher did not see the
// stream start: it reads which message streams from the log.
func TestReplicaViewerJoinsMidStreamOnce(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: lettered("b", 200), Chunks: 200, ChunkDelay: 10 * time.Millisecond}},
		envOptions{quiet: true})
	a, b := e.startReplica("A"), e.startReplica("B")
	s := e.newSession()
	wa := e.dialReplica(a, e.user, s.ID)
	wa.prompt("go")
	waitUntil(t, 60*time.Second, "the reply to stream", func() bool { return e.streamedWords(s.ID, "b") > 40 })
	wb := e.dialReplica(b, e.user, s.ID)
	// Up to the turn's end: the CLI prints the text's last delta with the
	// block's end, which may come after any count of words seen (the test
	// once compared the frames up to the 199th word with a log that had
	// the 200th by then).
	waitUntil(t, 60*time.Second, "the turn to end", func() bool { return e.turnsEnded(s.ID) > 0 })
	last, err := e.st.LastSeq(t.Context(), s.ID)
	if err != nil {
		t.Fatal(err)
	}
	frames := wb.waitFor(60*time.Second, fmt.Sprintf(`data-seq="%d"`, last))
	var msg string
	for _, ev := range e.rawEvents(s.ID, "stream_event") {
		if se, ok := streamjson.DecodeStreamEvent(ev); ok && se.Type == "message_start" {
			msg = se.MessageID
		}
	}
	var got strings.Builder
	for _, m := range namedDelta.FindAllStringSubmatch(frames, -1) {
		if m[1] != "m-"+msg {
			t.Errorf("a delta names %s, the reply is %s", m[1], msg)
		}
		got.WriteString(html.UnescapeString(m[2]))
	}
	want := e.logWords(s.ID)
	if words := replyWord.FindAllString(got.String(), -1); !slices.Equal(words, want) {
		t.Errorf("the viewer on the other replica got %d reply words, the log has %d; twice: %s; missing: %s",
			len(words), len(want), brief(twice(words)), brief(missing(words, want)))
	}
}

// namedDelta is a delta fragment: the block it names and its text.
var namedDelta = regexp.MustCompile(`<div hx-swap-oob="beforeend:#(m-[A-Za-z0-9_-]+) \.body">([^<]*)</div>`)
