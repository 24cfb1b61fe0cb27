package server

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/gorilla/websocket"

	"parley/runner/fakeapi"
)

// TestFaultPageReconnectsAfterAnyClose ends the page's socket mid-reply
// with every recoverable close: a clean 1000, 1001 (a server restart),
// 1009, 1011, an unknown code and a lost connection (1006). Each time the
// page reconnects by itself, catches up on what was streamed while it was
// away, and at the end shows exactly what a fresh load from Postgres shows.
func TestFaultPageReconnectsAfterAnyClose(t *testing.T) {
	closes := []struct {
		code   int
		reason string
	}{
		{websocket.CloseNormalClosure, ""},
		{websocket.CloseGoingAway, "server restarting"},
		{websocket.CloseMessageTooBig, ""},
		{websocket.CloseInternalServerErr, "oops"},
		{4000, "a code the page does not know"},
		{websocket.CloseAbnormalClosure, ""},
	}
	var sc fakeapi.Scenario
	holds := make([]chan struct{}, len(closes))
	for i := range closes {
		holds[i] = make(chan struct{})
		sc = append(sc, fakeapi.Step{Text: fmt.Sprintf("Reply %d begins.", i), Hold: holds[i]})
	}
	t.Cleanup(func() {
		for _, h := range holds {
			select {
			case <-h:
			default:
				close(h)
			}
		}
	})
	e := newEnv(t, sc, envOptions{quiet: true})
	proxy := newCloseProxy(t, e.web.URL)
	ctx := e.browser(t)
	startSession(t, ctx, proxy.URL(), "prompt 0", pollJS(`document.getElementById('conn').dataset.state === 'live'`))
	step(t, ctx, "count the socket's opens", chromedp.Evaluate(countOpens, nil))
	for i, c := range closes {
		if i > 0 {
			step(t, ctx, fmt.Sprintf("send prompt %d", i),
				chromedp.SetValue(`#prompt`, fmt.Sprintf("prompt %d", i), chromedp.ByID),
				chromedp.Evaluate(`document.getElementById('prompt-form').requestSubmit(); true`, nil))
		}
		step(t, ctx, fmt.Sprintf("reply %d streams", i),
			pollJS(fmt.Sprintf(`document.getElementById('events').textContent.includes('Reply %d begins.')`, i)))
		proxy.closeAll(c.code, c.reason)
		close(holds[i]) // the turn ends while the page is away
		step(t, ctx, fmt.Sprintf("after close %d the page reconnects and catches up", c.code),
			pollJS(fmt.Sprintf(`window.__opens === %d && document.getElementById('conn').dataset.state === 'live'`, i+1)),
			pollJS(fmt.Sprintf(`document.querySelectorAll('#events .turn-result').length === %d`, i+1)),
		)
	}
	var url string
	step(t, ctx, "where the session is", chromedp.Location(&url))
	live := readTranscript(t, ctx, "read the live transcript")
	sid := url[strings.LastIndex(url, "/")+1:]
	last, err := e.st.LastSeq(t.Context(), sid)
	if err != nil {
		t.Fatal(err)
	}
	if len(live.Dup) > 0 || !live.Sorted || live.Last != last {
		t.Errorf("after the closes: duplicate ids %v, in order %v, last seq %d (database %d)", live.Dup, live.Sorted, live.Last, last)
	}
	for i := range closes {
		if n := strings.Count(live.Text, fmt.Sprintf("Reply %d begins.", i)); n != 1 {
			t.Errorf("reply %d appears %d times:\n%s", i, n, live.Text)
		}
	}
	step(t, ctx, "reload from the database", chromedp.Navigate(url),
		pollJS(fmt.Sprintf(`document.querySelectorAll('#events .turn-result').length === %d`, len(closes))))
	if fresh := readTranscript(t, ctx, "read the reloaded transcript"); live.Text != fresh.Text {
		t.Errorf("the reconnected page differs from a fresh load:\n--- reconnected\n%s\n--- fresh\n%s", live.Text, fresh.Text)
	}
}

// TestFaultPageStopsOnlyAtSignOutOrRemoval: the two closes a page must not
// recover from. Removed from the project, the watcher's page says so (4003)
// and stops; signed out, it says so with a link to sign in again (4001).
func TestFaultPageStopsOnlyAtSignOutOrRemoval(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "Hello there."}}, envOptions{quiet: true, pingPeriod: 200 * time.Millisecond})
	s := e.newSession()
	for _, tc := range []struct {
		name, want string
		end        func(u *testUser)
		link       bool
	}{
		{"removed", reasonRemoved, func(u *testUser) {
			if err := e.st.RemoveMember(t.Context(), e.project.ID, u.ID); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"signed out", reasonSignedOut, func(u *testUser) {
			if err := e.st.RevokeAuthSession(t.Context(), tokenHash(u.Cookie)); err != nil {
				t.Fatal(err)
			}
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := e.member(tc.name+"@example.com", "Watcher "+tc.name, roleMember)
			ctx := browser(t)
			e.signInBrowser(t, ctx, u)
			step(t, ctx, "open the session",
				chromedp.Navigate(e.web.URL+"/sessions/"+s.ID),
				pollJS(`document.getElementById('conn').dataset.state === 'live'`),
				chromedp.Evaluate(countOpens, nil))
			tc.end(u)
			wantPageStopped(t, ctx, tc.want, tc.link, "it does not reconnect", "the close")
		})
	}
}

// TestFaultOversizedPromptRefusedInPage types a 300 KiB prompt: the page
// refuses it before sending, says how big it is and what the limit is,
// keeps the text in the box, and the socket stays open; a normal prompt
// right after is answered. (A browser cannot send invalid UTF-8 on a
// socket: it replaces a lone surrogate itself. TestFaultOversizedFrameAnswered
// sends one, and bytes, from a raw client.)
func TestFaultOversizedPromptRefusedInPage(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "Answered the normal prompt."}}, envOptions{quiet: true})
	s := e.newSession()
	ctx := e.browser(t)
	step(t, ctx, "open the session",
		chromedp.Navigate(e.web.URL+"/sessions/"+s.ID),
		pollJS(`document.getElementById('conn').dataset.state === 'live'`),
		chromedp.Evaluate(countOpens, nil))
	var note string
	var kept, opens int
	step(t, ctx, "send a 300 KiB prompt",
		chromedp.Evaluate(`document.getElementById('prompt').value = 'x'.repeat(300 * 1024); true`, nil),
		chromedp.Focus(`#prompt`, chromedp.ByID),
		pressEnter(0),
		chromedp.WaitVisible(`#prompt-note`, chromedp.ByID),
		chromedp.Text(`#prompt-note`, &note, chromedp.ByID),
		chromedp.Evaluate(`document.getElementById('prompt').value.length`, &kept),
	)
	if want := "This message is 300 KiB; the limit is 256 KiB."; note != want {
		t.Errorf("the page says %q, want %q", note, want)
	}
	if kept != 300*1024 {
		t.Errorf("the box holds %d characters, want the 300 KiB prompt kept", kept)
	}
	var reply string
	step(t, ctx, "a normal prompt right after is answered",
		chromedp.SetValue(`#prompt`, "a normal prompt", chromedp.ByID),
		chromedp.Focus(`#prompt`, chromedp.ByID),
		pressEnter(0),
		pollJS(`document.querySelectorAll('#events .turn-result').length === 1`),
		chromedp.Text(`#events`, &reply, chromedp.ByID),
		chromedp.Evaluate(`window.__opens`, &opens),
		chromedp.Text(`#prompt-note`, &note, chromedp.ByID),
	)
	if opens != 0 {
		t.Errorf("the socket was reopened %d times; the refusals must leave it open", opens)
	}
	if note != "" {
		t.Errorf("after a normal prompt the note still says %q", note)
	}
	if !strings.Contains(reply, "Answered the normal prompt.") || strings.Contains(reply, "xxxx") {
		t.Errorf("transcript:\n%s", reply)
	}
	if reqs := e.fake.Requests(); len(reqs) != 1 || !strings.Contains(reqs[0].LastUserText(), "a normal prompt") {
		t.Errorf("the model got %d requests; want only the normal prompt", len(reqs))
	}
}

// wantPageStopped checks that the page closed its socket for good: its
// banner says want (with a sign-in link or not), and after several times
// the first reconnect backoff (0.25-0.5 s) it has opened no socket
// (window.__opens, counted from countOpens) and still says so.
func wantPageStopped(t *testing.T, ctx context.Context, want string, link bool, stepName, after string) {
	t.Helper()
	var banner string
	var hasLink bool
	step(t, ctx, "the page says why it stopped",
		pollJS(`document.getElementById('conn').dataset.state === 'closed'`),
		chromedp.Text(`#offline`, &banner, chromedp.ByID),
		chromedp.Evaluate(`!!document.querySelector('#offline a[href^="/login"]')`, &hasLink))
	if !strings.Contains(banner, want) || hasLink != link {
		t.Errorf("banner %q (sign-in link %v); want %q (link %v)", banner, hasLink, want, link)
	}
	var opens int
	step(t, ctx, stepName, chromedp.Sleep(3*time.Second),
		chromedp.Evaluate(`window.__opens`, &opens),
		chromedp.Text(`#offline`, &banner, chromedp.ByID))
	if opens != 0 || !strings.Contains(banner, want) {
		t.Errorf("after %s: %d opens, banner %q", after, opens, banner)
	}
}
