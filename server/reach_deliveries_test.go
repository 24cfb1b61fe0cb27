package server

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"parley/runner/fakeapi"
	"parley/store"
)

// TestAskCardShowsDeliveries: an ask that reached its starter's phone
// says so on its card, in the inbox while it waits and on the session
// page when it is loaded again after the phone answered it ("answered
// by you from you's phone"), with every delivery of the ask in one line.
func TestAskCardShowsDeliveries(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{
		{Text: "Let me ask.", ToolName: askTool, ToolInput: twoColours()},
		{Text: "Green it is."},
	}, envOptions{reach: true, quiet: true})
	e.subscribe(e.user, "phone")
	sess := e.newSession()
	w := e.dial(sess.ID, 0)
	w.prompt("pick a colour")
	_, m := e.nextPush(60 * time.Second)
	const sent = "sent to you&#39;s phone"
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		inbox := e.getAs(e.user, "/inbox")
		if strings.Contains(inbox, `id="ask-`+m.InputID+`-reach"`) && strings.Contains(inbox, sent) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the inbox's card does not say %q:\n%s", sent, inbox)
		}
	}
	if code, text := e.answerWithToken(m, "choice:1"); code != 200 {
		t.Fatalf("answer from the notification: %d %q", code, text)
	}
	w.waitFor(60*time.Second, "Green it is.")
	bob := e.member("bob@example.com", "Bob", roleMember)
	if err := e.st.AddDelivery(t.Context(), store.Delivery{InputID: m.InputID, UserID: &bob.ID, Channel: "email", Target: "bob@example.com", Outcome: "sent"}); err != nil {
		t.Fatal(err)
	}
	page := e.dial(sess.ID, 0).waitFor(30*time.Second, `hx-swap-oob="innerHTML:#ask-`+m.InputID+`-reach"`, "e-mailed Bob", "you answered from you&#39;s phone: Green")
	if !strings.Contains(page, sent+` <time datetime="`) || !regexp.MustCompile(`</time></span>\s*·\s*<span`).MatchString(page) {
		t.Errorf("the reloaded session page's card lacks %q and the e-mail, one line:\n%s", sent, page)
	}
	ctx := e.browser(t)
	var line, outcome string
	var png []byte
	step(t, ctx, "open the session page",
		chromedp.Navigate(e.web.URL+"/sessions/"+sess.ID),
		chromedp.Poll(`(document.getElementById("ask-`+m.InputID+`-reach")||{}).innerText?.includes("e-mailed")`, nil,
			chromedp.WithPollingTimeout(30*time.Second)),
		chromedp.Text(`#ask-`+m.InputID+`-reach`, &line, chromedp.ByQuery),
		chromedp.Text(`#ask-`+m.InputID+` .ask-outcome`, &outcome, chromedp.ByQuery),
		chromedp.CaptureScreenshot(&png),
	)
	_ = os.WriteFile(filepath.Join(artefactDir(t), "deliveries.png"), png, 0o644)
	if !regexp.MustCompile(`^sent to you's phone \d\d:\d\d · e-mailed Bob \d\d:\d\d$`).MatchString(strings.TrimSpace(line)) {
		t.Errorf("the card's deliveries in Chromium = %q", line)
	}
	if outcome != "You answered from you's phone: Green" {
		t.Errorf("the card's outcome in Chromium = %q", outcome)
	}
}

// TestDeliveryText: each outcome of a delivery in a few words, a
// failure's detail kept off the page.
func TestDeliveryText(t *testing.T) {
	for _, c := range []struct {
		d    store.Delivery
		want string
	}{
		{store.Delivery{Channel: "push", Target: "Ann's phone", Outcome: "sent"}, "sent to Ann's phone"},
		{store.Delivery{Channel: "email", Target: "Bob", Outcome: "sent"}, "e-mailed Bob"},
		{store.Delivery{Channel: "slack", Target: "#ops", Outcome: "sent"}, "posted to #ops on Slack"},
		{store.Delivery{Channel: "webhook", Target: "webhook", Outcome: "sent"}, "sent to the webhook"},
		{store.Delivery{Channel: "push", Target: "Ann", Outcome: "suppressed"}, "not sent: Ann was looking"},
		{store.Delivery{Channel: "push", Target: "Ann, Bob", Outcome: "suppressed"}, "not sent: Ann, Bob were looking"},
		{store.Delivery{Channel: "push", Target: "Ann", Outcome: "no_device"}, "not pushed: Ann has no device with notifications on"},
		{store.Delivery{Channel: "push", Target: "Ann", Outcome: "quiet", Detail: "quiet hours 22:00–07:00"}, "not pushed: Ann's quiet hours 22:00–07:00"},
		{store.Delivery{Channel: "push", Target: "Ann's phone", Outcome: "failed", Detail: "POST https://push.example/secret-path: 500"}, "could not reach Ann's phone"},
		{store.Delivery{Channel: "webhook", Target: "webhook", Outcome: "failed", Detail: "https://hooks.example/T0/secret"}, "the webhook failed"},
	} {
		if got := deliveryText(c.d); got != c.want {
			t.Errorf("%+v: %q, want %q", c.d, got, c.want)
		}
	}
}
