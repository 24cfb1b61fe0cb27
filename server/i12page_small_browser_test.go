package server

import (
	"context"
	"strings"
	"testing"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"

	"parley/runner/fakeapi"
)

// TestBrowserViewerHasNoComposer: a viewer (read-only member) sees the
// session but no Send or Stop box; a member sees both.
func TestBrowserViewerHasNoComposer(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "Hello."}}, envOptions{quiet: true})
	s := e.newSession()
	viewer := e.member("viewer@example.com", "Vi", roleViewer)
	ctx := browser(t)
	e.signInBrowser(t, ctx, viewer)
	var forms int
	var note string
	step(t, ctx, "open the session as a viewer",
		chromedp.Navigate(e.web.URL+"/sessions/"+s.ID),
		pollJS(`document.getElementById('conn').dataset.state === 'live'`),
		chromedp.Evaluate(`document.querySelectorAll('#prompt-form, #stop-form, .composer, #prompt').length`, &forms),
		chromedp.Text(`#read-only`, &note, chromedp.ByID),
	)
	if forms != 0 {
		t.Errorf("the viewer's page has %d parts of the Send/Stop box", forms)
	}
	if !strings.Contains(note, "You can watch this session") {
		t.Errorf("the viewer's page says %q", note)
	}
	if page := e.getAs(e.user, "/sessions/"+s.ID); !strings.Contains(page, `id="prompt-form"`) || !strings.Contains(page, `id="stop-form"`) {
		t.Error("a member's page lacks the Send/Stop box")
	}
}

// notifyOverlaps reports what the notification offer covers: the composer,
// its Send or Stop button, or an ask card; and whether it is fixed.
const notifyOverlaps = `(() => {
	` + rectsOverlap + `
	const offer = document.getElementById('notify-offer');
	if (!offer) return 'no offer';
	const bad = [];
	if (getComputedStyle(offer).position === 'fixed') bad.push('fixed');
	for (const el of document.querySelectorAll('.composer, #prompt-form button, #stop-form button, .ask, .ask button'))
		if (overlap(offer, el)) bad.push(el.className || el.tagName);
	// What a tap at a button's centre hits must be the button itself.
	for (const b of document.querySelectorAll('#prompt-form button, .ask button[type="submit"]')) {
		b.scrollIntoView({block: 'center'});
		const r = b.getBoundingClientRect();
		const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
		if (!b.contains(hit)) bad.push('covered: ' + b.textContent.trim());
	}
	offer.scrollIntoView({block: 'start'});
	for (const el of document.querySelectorAll('.composer, .ask'))
		if (overlap(offer, el)) bad.push('in view: ' + el.className);
	return bad.join('; ');
})()`

// TestBrowserNotifyOfferNeverCovers opens an ask, so that the page offers
// browser notifications, and checks at desktop size and at 375 px that the
// offer sits in the page's flow and covers neither the composer nor the card.
func TestBrowserNotifyOfferNeverCovers(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{
		{Text: "I need a decision.", ToolName: askTool, ToolInput: colourQuestion(false)},
		{Text: "Done."},
	}, envOptions{quiet: true})
	ctx := e.browser(t)
	step(t, ctx, "let the page ask for notifications", chromedp.ActionFunc(func(ctx context.Context) error {
		return cdpbrowser.SetPermission(&cdpbrowser.PermissionDescriptor{Name: "notifications"}, cdpbrowser.PermissionSettingPrompt).
			WithOrigin(e.web.URL).Do(ctx)
	}))
	startSession(t, ctx, e.web.URL, "Please pick a colour", chromedp.WaitVisible(`.ask input[value="Blue"]`, chromedp.ByQuery))
	for _, size := range []struct {
		name string
		emu  chromedp.Action
	}{
		{"desktop", chromedp.EmulateViewport(1200, 900)},
		{"375 px", chromedp.EmulateViewport(375, 812, chromedp.EmulateScale(2), chromedp.EmulateMobile)},
	} {
		var perm, bad string
		step(t, ctx, "the offer at "+size.name,
			size.emu,
			chromedp.Reload(),
			chromedp.WaitVisible(`.ask input[value="Blue"]`, chromedp.ByQuery),
			chromedp.Evaluate(`Notification.permission`, &perm),
			chromedp.WaitVisible(`#notify-offer`, chromedp.ByID),
			chromedp.Evaluate(notifyOverlaps, &bad),
		)
		if perm != "default" {
			t.Fatalf("Notification.permission = %q; the test needs default", perm)
		}
		if bad != "" {
			t.Errorf("at %s the notification offer: %s", size.name, bad)
		}
	}
}

// TestBrowserAnswerOutcomeNamesTheAnswerer: one card answered by Bea (from
// her socket), one by Cy in the page. Cy reads "Bea answered: Blue" and
// "You answered: Green", live and after a reload; Bea, in the same page
// signed in as her, reads "You answered: Blue" and "Cy answered: Green".
func TestBrowserAnswerOutcomeNamesTheAnswerer(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{
		{Text: "First decision.", ToolName: askTool, ToolInput: colourQuestion(false)},
		{Text: "Second decision.", ToolName: askTool, ToolInput: colourQuestion(false)},
		{Text: "All decided."},
	}, envOptions{quiet: true})
	bea := e.member("bea@example.com", "Bea", roleMember)
	cy := e.member("cy@example.com", "Cy", roleMember)
	s := e.newSession()
	ctx := browser(t)
	e.signInBrowser(t, ctx, cy)
	wb := e.dialAs(bea, s.ID, 0)
	step(t, ctx, "Cy prompts",
		chromedp.Navigate(e.web.URL+"/sessions/"+s.ID),
		pollJS(`document.getElementById('conn').dataset.state === 'live'`),
		chromedp.SetValue(`#prompt`, "decide twice", chromedp.ByID),
		chromedp.Evaluate(`document.getElementById('prompt-form').requestSubmit(); true`, nil),
		chromedp.WaitVisible(`.ask input[value="Blue"]`, chromedp.ByQuery),
	)
	in := e.waitInput(wb, s.ID)
	wb.answer(in, map[string]any{"decision": "answer", "choice_0": "Blue", "other_0": ""})
	step(t, ctx, "Cy answers the second card",
		pollJS(`[...document.querySelectorAll('.ask-outcome')].some(p => p.textContent === 'Bea answered: Blue')`),
		pollJS(`document.querySelectorAll('.ask input[value="Green"]').length === 1`),
		chromedp.Click(`.ask input[value="Green"]`, chromedp.ByQuery),
		chromedp.Click(`.ask button[type="submit"]`, chromedp.ByQuery),
		pollJS(`document.getElementById('events').innerText.includes('All decided.')`),
	)
	outcomes := func(what string) []string {
		var got []string
		step(t, ctx, what, chromedp.Evaluate(`[...document.querySelectorAll('.ask-outcome')].map(p => p.textContent)`, &got))
		return got
	}
	want := func(what string, got []string, w ...string) {
		t.Helper()
		if strings.Join(got, " | ") != strings.Join(w, " | ") {
			t.Errorf("%s: outcomes %q, want %q", what, got, w)
		}
	}
	want("Cy, live", outcomes("read the live outcomes"), "Bea answered: Blue", "You answered: Green")
	step(t, ctx, "Cy reloads", chromedp.Reload(), pollJS(`document.getElementById('events').innerText.includes('All decided.')`))
	want("Cy, after reload", outcomes("read the reloaded outcomes"), "Bea answered: Blue", "You answered: Green")
	e.signInBrowser(t, ctx, bea)
	step(t, ctx, "Bea loads the page", chromedp.Reload(), pollJS(`document.getElementById('events').innerText.includes('All decided.')`))
	want("Bea", outcomes("read Bea's outcomes"), "You answered: Blue", "Cy answered: Green")
}
