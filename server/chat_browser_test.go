package server

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"parley/runner/fakeapi"
)

// cutProxy forwards connections to a server (the web server, Postgres); cut
// drops every open connection without a close handshake, as a network
// failure or laptop sleep does. While partitioned it refuses new
// connections too (heal ends that).
type cutProxy struct {
	ln    net.Listener
	mu    sync.Mutex
	down  bool
	conns map[net.Conn]bool
	wg    sync.WaitGroup
}

func newCutProxy(t *testing.T, backend string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return newRelayProxy(t, ln, "tcp", backend)
}

// newRelayProxy forwards each connection ln accepts to target on network.
func newRelayProxy(t *testing.T, ln net.Listener, network, target string) *cutProxy {
	p := &cutProxy{ln: ln, conns: map[net.Conn]bool{}}
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b, err := net.Dial(network, target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			down := p.down // checked where partition cuts, so none slips by
			if !down {
				p.conns[c], p.conns[b] = true, true
			}
			p.mu.Unlock()
			if down {
				c.Close()
				b.Close()
				continue
			}
			p.wg.Go(func() { io.Copy(b, c); b.Close() })
			p.wg.Go(func() { io.Copy(c, b); c.Close() })
		}
	})
	t.Cleanup(func() { ln.Close(); p.cut(); p.wg.Wait() })
	return p
}

func (p *cutProxy) URL() string { return "http://" + p.ln.Addr().String() }

func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetLinger(0) // a reset, not a polite FIN
		}
		c.Close()
		delete(p.conns, c)
	}
}

// partition cuts every connection and refuses new ones until heal, as a
// network partition does.
func (p *cutProxy) partition() {
	p.mu.Lock()
	p.down = true
	p.mu.Unlock()
	p.cut()
}

func (p *cutProxy) heal() {
	p.mu.Lock()
	p.down = false
	p.mu.Unlock()
}

// noDialogs fails the test if the page opens any alert, confirm or prompt.
func noDialogs(t *testing.T, ctx context.Context) *[]string {
	var mu sync.Mutex
	seen := &[]string{}
	chromedp.ListenTarget(ctx, func(ev any) {
		if d, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			mu.Lock()
			*seen = append(*seen, d.Message)
			mu.Unlock()
			go chromedp.Run(ctx, page.HandleJavaScriptDialog(false))
		}
	})
	return seen
}

func startSession(t testing.TB, ctx context.Context, base, text string, wait chromedp.Action) {
	t.Helper()
	step(t, ctx, "start a session",
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(`#new-prompt`, chromedp.ByID),
		chromedp.SendKeys(`#new-prompt`, text, chromedp.ByID),
		chromedp.Submit(`#new-prompt`, chromedp.ByID),
		chromedp.WaitVisible(`#events`, chromedp.ByID),
		wait,
	)
}

func TestBrowserModelOutputNeverRunsScript(t *testing.T) {
	hostile := "Here is **bold** text.\n\n<img src=x onerror=alert(1)>\n\n[click me](javascript:alert(2))\n\nbefore <script>alert(3)</script> after\n\n```go\nfunc main() {}\n```\n"
	e := newEnv(t, fakeapi.Scenario{{Text: hostile, Chunks: 4}}, envOptions{quiet: true})
	ctx := e.browser(t)
	dialogs := noDialogs(t, ctx)
	startSession(t, ctx, e.web.URL, "show me something", chromedp.WaitVisible(`#events .assistant:not(.live) .md strong`, chromedp.ByQuery))
	check := func(when string) {
		var bad int
		var text string
		step(t, ctx, "inspect the transcript "+when,
			chromedp.WaitVisible(`#events .turn-result`, chromedp.ByQuery),
			chromedp.Evaluate(`document.querySelectorAll('#events script, #events [onerror], #events [onclick], #events a[href^="javascript"], #events img').length`, &bad),
			chromedp.Text(`#events .assistant`, &text, chromedp.ByQuery),
		)
		if bad != 0 {
			t.Errorf("%s: %d dangerous elements in the transcript", when, bad)
		}
		for _, want := range []string{"Here is bold text.", "click me", "before", "after", "func main() {}"} {
			if !strings.Contains(text, want) {
				t.Errorf("%s: the message lacks %q:\n%s", when, want, text)
			}
		}
	}
	check("live")
	var chroma int
	step(t, ctx, "reload: the backlog renders the same way",
		chromedp.Reload(),
		chromedp.WaitVisible(`#events .assistant .md strong`, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelectorAll('#events .md pre.chroma span.kd').length`, &chroma),
	)
	check("after reload")
	if chroma == 0 {
		t.Error("the Go code block is not highlighted")
	}
	time.Sleep(300 * time.Millisecond) // let any stray handler fire
	if len(*dialogs) > 0 {
		t.Errorf("model output opened dialogs: %q", *dialogs)
	}
}

// transcriptCheck is what the page holds: each event once, in order.
const transcriptCheck = `(() => {
	const ids = [...document.querySelectorAll('#events [id]')].map(e => e.id);
	const dup = ids.filter((id, i) => ids.indexOf(id) !== i);
	const seqs = [...document.querySelectorAll('#events [id^="ev-"]')].map(e => +e.id.slice(3));
	const sorted = seqs.every((s, i) => i === 0 || seqs[i-1] < s);
	return JSON.stringify({dup, sorted, last: +document.getElementById('last-seq').dataset.seq,
		// The ask countdown ticks every second; it is not transcript.
		text: document.getElementById('events').innerText.replace(/times out in \d+:\d\d/g, 'times out in m:ss')});
})()`

type transcriptState struct {
	Dup    []string
	Sorted bool
	Last   int64
	Text   string
}

func readTranscript(t *testing.T, ctx context.Context, what string) transcriptState {
	t.Helper()
	var raw string
	var s transcriptState
	step(t, ctx, what, chromedp.Evaluate(transcriptCheck, &raw))
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return s
}

func TestBrowserReconnectCatchesUpMidStreamAndMidAsk(t *testing.T) {
	streamed := "One two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen."
	e := newEnv(t, fakeapi.Scenario{
		{Text: streamed, Chunks: 16, ChunkDelay: 150 * time.Millisecond, ToolName: askTool, ToolInput: colourQuestion(false)},
		{Text: "After the answer: " + fakeapi.ToolResultPlaceholder, Chunks: 6, ChunkDelay: 100 * time.Millisecond},
	}, envOptions{quiet: true})
	proxy := newCutProxy(t, strings.TrimPrefix(e.web.URL, "http://"))
	ctx := e.browser(t)
	startSession(t, ctx, proxy.URL(), "count for me", chromedp.Poll(`(document.querySelector('#events .assistant.live .body')||{}).textContent?.length > 5`, nil))

	proxy.cut() // in the middle of the streaming text
	step(t, ctx, "the banner says offline, then back",
		chromedp.Poll(`document.getElementById('offline').dataset.state === 'offline' || document.getElementById('offline').dataset.state === 'back'`, nil),
		chromedp.Poll(`document.getElementById('offline').dataset.state === 'back' && !document.getElementById('offline').hidden`, nil),
		chromedp.WaitVisible(`#events .ask`, chromedp.ByQuery),
	)
	proxy.cut() // with the ask pending
	var url string
	step(t, ctx, "reconnect with the ask pending and answer it",
		chromedp.Poll(`document.getElementById('conn').dataset.state === 'offline'`, nil),
		chromedp.Poll(`document.getElementById('conn').dataset.state === 'live'`, nil),
		chromedp.Click(`.ask input[value="Blue"]`, chromedp.ByQuery),
		chromedp.Click(`.ask button[type="submit"]`, chromedp.ByQuery),
		chromedp.Poll(`document.getElementById('events').innerText.includes('After the answer:')`, nil),
	)
	proxy.cut() // while the reply streams
	step(t, ctx, "catch up to the end of the turn",
		chromedp.Poll(`document.querySelectorAll('#events .turn-result').length === 1 && document.getElementById('conn').dataset.state === 'live'`, nil),
		chromedp.Location(&url),
	)
	live := readTranscript(t, ctx, "read the live transcript")
	sid := url[strings.LastIndex(url, "/")+1:]
	last, err := e.st.LastSeq(t.Context(), sid)
	if err != nil {
		t.Fatal(err)
	}
	if len(live.Dup) > 0 || !live.Sorted || live.Last != last {
		t.Errorf("after reconnects: duplicate ids %v, in order %v, last seq %d (database %d)", live.Dup, live.Sorted, live.Last, last)
	}
	if n := strings.Count(live.Text, streamed); n != 1 {
		t.Errorf("the streamed text appears %d times:\n%s", n, live.Text)
	}
	// A fresh load replays the whole log from Postgres: the reconnected page
	// must show exactly the same transcript.
	step(t, ctx, "reload from the database", chromedp.Navigate(url), chromedp.WaitVisible(`#events .turn-result`, chromedp.ByQuery))
	fresh := readTranscript(t, ctx, "read the reloaded transcript")
	if live.Text != fresh.Text {
		t.Errorf("the reconnected page differs from a fresh load:\n--- reconnected\n%s\n--- fresh\n%s", live.Text, fresh.Text)
	}
	if got, _ := e.lastToolResult(2); !strings.Contains(got, "Blue") {
		t.Errorf("model received %q, want the answer Blue", got)
	}
}

func TestBrowserQueueStopAndKeys(t *testing.T) {
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	e := newEnv(t, fakeapi.Scenario{
		{Text: "Working on a long answer", Hold: hold},
		{Text: "Second turn answered."},
	}, envOptions{quiet: true})
	ctx := e.browser(t)
	startSession(t, ctx, e.web.URL, "start something long", chromedp.Poll(`document.getElementById('events').innerText.includes('Working on a long answer')`, nil))
	var value string
	step(t, ctx, "Shift+Enter adds a line, Enter sends; sent during a turn, it is queued",
		chromedp.SendKeys(`#prompt`, "line one", chromedp.ByID),
		pressEnter(input.ModifierShift),
		chromedp.SendKeys(`#prompt`, "line two", chromedp.ByID),
		chromedp.Value(`#prompt`, &value, chromedp.ByID),
	)
	if value != "line one\nline two" {
		t.Fatalf("after Shift+Enter the box holds %q", value)
	}
	step(t, ctx, "send with Enter",
		pressEnter(0),
		chromedp.WaitVisible(`#events .prompt.is-queued .queued`, chromedp.ByQuery),
		chromedp.Value(`#prompt`, &value, chromedp.ByID),
	)
	if value != "" {
		t.Errorf("the box still holds %q after sending", value)
	}
	var text string
	step(t, ctx, "Stop ends the turn and the queued prompt runs",
		chromedp.Click(`#stop-form button`, chromedp.ByQuery),
		chromedp.Poll(`document.getElementById('events').innerText.includes('Stopped by you')`, nil),
		chromedp.Poll(`document.getElementById('events').innerText.includes('Second turn answered.')`, nil),
		chromedp.WaitNotPresent(`#events .prompt.is-queued`, chromedp.ByQuery),
		chromedp.Text(`#events`, &text, chromedp.ByID),
	)
	if !strings.Contains(text, "line one\nline two") || !strings.Contains(text, "was queued") {
		t.Errorf("transcript after stop:\n%s", text)
	}
	// The CLI hands the queued prompt to the model after its interrupt note.
	if got := e.fake.Requests()[1].LastUserText(); !strings.HasSuffix(got, "line one\nline two") {
		t.Errorf("the queued prompt reached the model as %q", got)
	}
}

func TestBrowserRetryAfterAPIError(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{
		{Status: 413},
		{Text: "Recovered after the retry."},
	}, envOptions{quiet: true})
	ctx := e.browser(t)
	startSession(t, ctx, e.web.URL, "try this", chromedp.WaitVisible(`#events .turn-result.is-error button.retry`, chromedp.ByQuery))
	var text string
	step(t, ctx, "retry",
		chromedp.Text(`#events .turn-result.is-error`, &text, chromedp.ByQuery),
		chromedp.Click(`#events button.retry`, chromedp.ByQuery),
		chromedp.Poll(`document.getElementById('events').innerText.includes('Recovered after the retry.')`, nil),
	)
	if !strings.Contains(text, "error") {
		t.Errorf("the failed turn says %q", text)
	}
	reqs := e.fake.Requests()
	// The failed turn's prompt stays in the conversation; the CLI joins the
	// resent one to it.
	if got := reqs[len(reqs)-1].LastUserText(); !strings.HasSuffix(got, "try this") || strings.Count(got, "try this") != 2 {
		t.Errorf("retry sent %q, want the last prompt again", got)
	}
}

// TestBrowserPhoneLayoutAndAccessibility opens a session with a tool card,
// highlighted code and a pending ask at 375 px, checks that nothing spills
// sideways and that every control has an accessible name, and saves the
// screenshots the README shows (PARLEY_SCREENSHOTS_DIR).
func TestBrowserPhoneLayoutAndAccessibility(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{
		{Text: "Let me look at the workspace first.", ToolName: "Bash", ToolInput: map[string]any{"command": "echo hello from the workspace", "description": "Say hello"}},
		{Text: "Before I change the button, which colour should it be?\n\n```css\n.button { color: var(--accent); }\n```", ToolName: askTool, ToolInput: colourQuestion(false)},
		{Text: "Done."},
	}, envOptions{quiet: true})
	ctx := e.browser(t)
	startSession(t, ctx, e.web.URL, "Restyle the primary button", chromedp.WaitVisible(`#events .ask`, chromedp.ByQuery))
	var desktop []byte
	step(t, ctx, "desktop screenshot",
		chromedp.WaitVisible(`#events .tool-result pre`, chromedp.ByQuery),
		chromedp.Evaluate(dismissPrompts, nil),
		chromedp.FullScreenshot(&desktop, 100),
	)
	live := readTranscript(t, ctx, "read the live transcript")

	var width int
	var phone []byte
	step(t, ctx, "375 px wide",
		chromedp.EmulateViewport(375, 812, chromedp.EmulateScale(2), chromedp.EmulateMobile),
		chromedp.Reload(),
		chromedp.WaitVisible(`#events .ask`, chromedp.ByQuery),
		chromedp.Sleep(200*time.Millisecond),
		chromedp.Evaluate(dismissPrompts, nil),
		chromedp.Evaluate(`document.documentElement.scrollWidth`, &width),
		chromedp.FullScreenshot(&phone, 100),
	)
	if fresh := readTranscript(t, ctx, "read the reloaded transcript"); fresh.Text != live.Text {
		t.Errorf("the live page differs from a fresh load:\n--- live\n%s\n--- fresh\n%s", live.Text, fresh.Text)
	}
	if width > 375 {
		t.Errorf("the page is %d px wide at 375 px: it scrolls sideways", width)
	}
	dir := artefactDir(t)
	for name, png := range map[string][]byte{"session-ask-desktop.png": desktop, "session-ask-375.png": phone} {
		if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
		if d := os.Getenv("PARLEY_SCREENSHOTS_DIR"); d != "" {
			if err := os.WriteFile(filepath.Join(d, name), png, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "session-ask-375.png")); err != nil || fi.Size() < 1000 {
		t.Errorf("phone screenshot not saved: %v", err)
	}

	var nodes []*accessibility.Node
	step(t, ctx, "read the accessibility tree", chromedp.ActionFunc(func(ctx context.Context) error {
		var err error
		nodes, err = accessibility.GetFullAXTree().Do(ctx)
		return err
	}))
	controls := map[string]bool{"button": true, "textbox": true, "link": true, "checkbox": true, "radio": true, "combobox": true, "searchbox": true}
	named := map[string]bool{}
	for _, n := range nodes {
		if n.Ignored || n.Role == nil {
			continue
		}
		role := strings.Trim(string(n.Role.Value), `"`)
		if !controls[role] {
			continue
		}
		name := ""
		if n.Name != nil {
			name = strings.Trim(string(n.Name.Value), `"`)
		}
		if strings.TrimSpace(name) == "" {
			t.Errorf("a %s has no accessible name (backend node %d)", role, n.BackendDOMNodeID)
		}
		named[role+":"+name] = true
	}
	for _, want := range []string{"textbox:Message Claude", "button:Send", "button:Stop Claude's current turn", "radio:Blue Calm", "link:Export Markdown"} {
		if !named[want] {
			t.Errorf("the accessibility tree lacks %q; it has %v", want, keys(named))
		}
	}

	var light, dark string
	step(t, ctx, "the theme follows the system",
		emulation.SetEmulatedMedia().WithFeatures([]*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "light"}}),
		chromedp.Evaluate(`getComputedStyle(document.body).backgroundColor`, &light),
		emulation.SetEmulatedMedia().WithFeatures([]*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}),
		chromedp.Evaluate(`getComputedStyle(document.body).backgroundColor`, &dark),
	)
	if light == dark || light != "rgb(255, 255, 255)" {
		t.Errorf("background light %q, dark %q; want white and a dark colour", light, dark)
	}
	// The look-and-feel pictures of docs/using.md (screenshots_browser_test.go).
	var here string
	step(t, ctx, "the session's address", chromedp.Location(&here))
	docShots(t, ctx, e.web.URL, here)
}

// dismissPrompts closes offers that would cover the transcript in a
// screenshot (the notification offer).
const dismissPrompts = `document.querySelectorAll('button').forEach(b => { if (b.textContent.trim() === 'Not now') b.click() })`

// pressEnter presses Enter as a keyboard does: one keyDown carrying the
// text, so a handler that prevents its default stops the newline.
func pressEnter(mods input.Modifier) chromedp.Action {
	return chromedp.ActionFunc(func(ctx context.Context) error {
		down := input.DispatchKeyEvent(input.KeyDown).WithKey("Enter").WithCode("Enter").
			WithWindowsVirtualKeyCode(13).WithNativeVirtualKeyCode(13).WithText("\r").WithModifiers(mods)
		if err := down.Do(ctx); err != nil {
			return err
		}
		return input.DispatchKeyEvent(input.KeyUp).WithKey("Enter").WithCode("Enter").
			WithWindowsVirtualKeyCode(13).WithNativeVirtualKeyCode(13).WithModifiers(mods).Do(ctx)
	})
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
