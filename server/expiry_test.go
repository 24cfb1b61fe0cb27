package server

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"parley/runner/fakeapi"
	"parley/runstore"
	"parley/store"
)

// A detached ask that nobody answers expires after the project's expiry
// days: its card and the inbox say so, and the session is no longer
// waiting. Before its time it stays open, and the sweep says when to look
// again.
func TestDetachedAskExpires(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{
		{Text: "Let me ask.", ToolName: askTool, ToolInput: colourQuestion(false)},
		{Text: "Carrying on."},
	}, envOptions{quiet: true})
	if err := e.st.SetAskSettings(t.Context(), e.project.ID, store.AskSettings{ExpiryDays: 2}); err != nil {
		t.Fatal(err)
	}
	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt("pick a colour")
	in := e.waitInput(w, s.ID)
	x := runstore.NewExpirer(e.st, e.srv.log)

	// Attached: the live process waits for it, so it never expires.
	x.Now = func() time.Time { return time.Now().Add(3 * 24 * time.Hour) }
	if _, err := x.Sweep(t.Context(), e.sup); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.st.GetInput(t.Context(), in.ID); got.Status != "pending" {
		t.Fatalf("an attached ask is %q after the sweep, want pending", got.Status)
	}

	e.sup.Stop(s.ID) // the process ends; the ask stays open, detached
	w.waitFor(60*time.Second, "process has ended since it asked")
	x.Now = func() time.Time { return time.Now().Add(24 * time.Hour) }
	next, err := x.Sweep(t.Context(), e.sup)
	if err != nil {
		t.Fatal(err)
	}
	if want := in.CreatedAt.Add(48 * time.Hour); next == nil || !next.Equal(want) {
		t.Errorf("next expiry = %v, want %v", next, want)
	}
	if got, _ := e.st.GetInput(t.Context(), in.ID); got.Status != "pending" {
		t.Fatalf("a one-day-old ask is %q, want pending (it expires after 2 days)", got.Status)
	}

	inbox := e.dialPath("/inbox/ws?list=1")
	inbox.waitFor(30*time.Second, `id="inbox-`+in.ID+`"`, `data-count="1"`)
	x.Now = func() time.Time { return time.Now().Add(3 * 24 * time.Hour) }
	if next, err = x.Sweep(t.Context(), e.sup); err != nil || next != nil {
		t.Fatalf("sweep = %v, %v; want nothing left to expire", next, err)
	}
	got, _ := e.st.GetInput(t.Context(), in.ID)
	if got.Status != "expired" {
		t.Fatalf("the ask is %q after its expiry, want expired", got.Status)
	}
	w.waitFor(30*time.Second, "Question expired: nobody answered within 2 days")
	inbox.waitFor(30*time.Second, `data-status="expired"`, "nobody answered within 2 days", `data-count="0"`)
	if sess, _ := e.st.GetSession(t.Context(), s.ID); sess.Status != "ended" {
		t.Errorf("session status = %q after its only ask expired, want ended", sess.Status)
	}
	// An answer that comes too late is refused with the reason.
	w.answer(got, map[string]any{"choice": "Blue"})
	w.waitFor(30*time.Second, "expired")

	ctx := e.browser(t)
	// Read by script in one go: the pages' sockets may re-render the
	// entries between a wait and a separate read.
	text := func(sel string) string {
		return `(document.querySelector(` + strconv.Quote(sel) + `) || {innerText: ""}).innerText`
	}
	var card, listed string
	step(t, ctx, "the session page and the inbox show the expired ask",
		chromedp.Navigate(e.web.URL+"/sessions/"+s.ID),
		chromedp.Poll(text(`#ask-`+in.ID+` .ask-expired`)+`.includes("expired")`, nil, chromedp.WithPollingTimeout(30*time.Second)),
		chromedp.Evaluate(text(`#ask-`+in.ID+` .ask-expired`), &card),
		chromedp.Navigate(e.web.URL+"/inbox"),
		chromedp.Poll(text(`#inbox-`+in.ID+` .ask-expired`)+`.includes("expired")`, nil, chromedp.WithPollingTimeout(30*time.Second)),
		chromedp.Evaluate(text(`#inbox-`+in.ID), &listed),
	)
	if !strings.Contains(card, "Question expired: nobody answered within 2 days") {
		t.Errorf("session card says %q", card)
	}
	if !strings.Contains(listed, "Which colour?") || !strings.Contains(listed, "expired") {
		t.Errorf("inbox entry says %q", listed)
	}
}

// A detached ask of a session that has a live run again (a later message
// resumed it) expires through that run, which numbers the event.
func TestDetachedAskExpiresThroughTheLiveRun(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{
		{Text: "Let me ask.", ToolName: askTool, ToolInput: colourQuestion(false)},
	}, envOptions{quiet: true})
	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt("pick a colour")
	in := e.waitInput(w, s.ID)
	e.waitTranscript(s, askTool)
	e.sup.Stop(s.ID)
	w.waitFor(60*time.Second, "process has ended since it asked")
	w.prompt("never mind")
	w.waitFor(60*time.Second, `class="item turn-result"`)
	if _, live := e.sup.Live(s.ID); !live {
		t.Fatal("no live run after the new message")
	}
	x := runstore.NewExpirer(e.st, e.srv.log)
	x.Now = func() time.Time { return time.Now().Add(8 * 24 * time.Hour) }
	if _, err := x.Sweep(t.Context(), e.sup); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.st.GetInput(t.Context(), in.ID); got.Status != "expired" {
		t.Fatalf("the ask is %q, want expired", got.Status)
	}
	w.waitFor(30*time.Second, "Question expired: nobody answered within 7 days")
	// The run goes on numbering the log after the expiry.
	w.prompt("and now?")
	w.waitFor(60*time.Second, `class="item turn-result"`)
}
