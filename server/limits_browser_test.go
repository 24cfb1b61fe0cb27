package server

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"parley/runner/fakeapi"
	"parley/store"
)

// eventsInclude polls until the transcript's text holds s.
func eventsInclude(s string) chromedp.Action {
	return chromedp.Poll(`document.getElementById('events').innerText.includes(`+quote(s)+`)`, nil)
}

// One model request costs about $4 (1M input tokens); the session's limit
// is $1: the CLI ends the turn, the page says why, and the next message is
// refused until the limit is raised.
func TestBrowserSpendingLimitEndsTheTurn(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{
		{Text: "Expensive thinking.", ToolName: "Bash", ToolInput: map[string]any{"command": "echo hi"}, InputTokens: 1_000_000},
		{Text: "never reached"},
	}, envOptions{quiet: true})
	if err := e.st.SetProjectLimits(t.Context(), e.project.ID, store.ProjectLimits{SessionBudgetUSD: 1}); err != nil {
		t.Fatal(err)
	}
	ctx := e.browser(t)
	startSession(t, ctx, e.web.URL, "think hard", eventsInclude("Claude stopped: the spending limit was reached."))
	var status, events string
	step(t, ctx, "the turn ends with a notice",
		eventsInclude("This session has spent $4.00, its limit is $1.00."),
		chromedp.WaitVisible(`#session-status.status-interrupted`, chromedp.ByQuery),
		chromedp.Text(`#session-status`, &status, chromedp.ByID),
		chromedp.Text(`#events`, &events, chromedp.ByID),
	)
	if status != "interrupted" || strings.Contains(events, "never reached") {
		t.Errorf("status %q; transcript:\n%s", status, events)
	}
	if n := len(e.fake.Requests()); n != 1 {
		t.Errorf("%d model requests; want 1 (the CLI stops at --max-budget-usd)", n)
	}
	var toast, budget string
	step(t, ctx, "a new message is refused",
		chromedp.SendKeys(`#prompt`, "go on", chromedp.ByID),
		pressEnter(0),
		chromedp.WaitVisible(`#toasts .toast-error`, chromedp.ByQuery),
		chromedp.Text(`#toasts .toast-error`, &toast, chromedp.ByQuery),
		chromedp.Reload(),
		chromedp.WaitVisible(`#budget`, chromedp.ByID),
		chromedp.Text(`#budget`, &budget, chromedp.ByID),
	)
	if !strings.Contains(toast, "This session has spent $4.00, its limit is $1.00.") {
		t.Errorf("refusal = %q", toast)
	}
	if !strings.Contains(budget, "this session $4.00 of $1.00") {
		t.Errorf("budget line = %q", budget)
	}
	sessions, _ := e.st.ListSessions(t.Context(), e.project.ID)
	if len(sessions) != 1 || sessions[0].Status != "interrupted" {
		t.Errorf("sessions = %+v; want one, interrupted", sessions)
	}
}

// The project's daily limit counts every session: the turn that crosses it
// gets the notice, and no session takes a new message.
func TestDailyLimitSpansSessions(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "first", InputTokens: 1_000_000}, {Text: "second", InputTokens: 1_000_000}},
		envOptions{quiet: true})
	if err := e.st.SetProjectLimits(t.Context(), e.project.ID, store.ProjectLimits{DailyBudgetUSD: 5}); err != nil {
		t.Fatal(err)
	}
	a, b := e.newSession(), e.newSession()
	wa := e.dial(a.ID, 0)
	wa.prompt("one")
	wa.waitFor(60*time.Second, "turn-result")
	wb := e.dial(b.ID, 0)
	wb.prompt("two")
	wb.waitFor(60*time.Second, "The project has spent $8.00 today, its daily limit is $5.00.")
	wa.prompt("three")
	wa.waitFor(30*time.Second, "toast-error", "its daily limit is $5.00.")
	sp, err := e.st.Spending(t.Context(), a.ID)
	if err != nil || sp.TodayUSD < 8 || sp.TodayUSD > 8.01 {
		t.Errorf("spent today = %v, %v; want about $8", sp.TodayUSD, err)
	}
}

// A turn that prints nothing for the watchdog's time is interrupted; the
// page says so, and the session takes the next message.
func TestBrowserWatchdogInterruptsAStalledTurn(t *testing.T) {
	never := make(chan struct{})
	e := newEnv(t, fakeapi.Scenario{{Text: "Thinking very slowly", Hold: never}, {Text: "Back with an answer."}}, envOptions{quiet: true})
	// The project's own watchdog time (the server's default is the
	// launcher's, fixed when the server is made).
	if err := e.st.SetProjectLimits(t.Context(), e.project.ID, store.ProjectLimits{StallSeconds: 3}); err != nil {
		t.Fatal(err)
	}
	ctx := e.browser(t)
	startSession(t, ctx, e.web.URL, "take your time", eventsInclude("Claude printed nothing for 3 seconds, so Parley interrupted the turn."))
	var status string
	step(t, ctx, "the stalled turn is interrupted",
		chromedp.WaitVisible(`#session-status.status-interrupted`, chromedp.ByQuery),
		chromedp.Text(`#session-status`, &status, chromedp.ByID),
	)
	step(t, ctx, "the session goes on",
		chromedp.SendKeys(`#prompt`, "are you there?", chromedp.ByID),
		pressEnter(0),
		eventsInclude("Back with an answer."),
		chromedp.WaitVisible(`#session-status.status-completed`, chromedp.ByQuery),
	)
}
