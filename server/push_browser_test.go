package server

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"parley/reach"
	"parley/runner/fakeapi"
	"parley/store"
)

// pushReady is the notifications page once static/push.js runs its buttons.
const pushReady = `#notifications[data-js="ready"]`

// TestBrowserNotificationsPage: on a 375 px phone, a person turns
// notifications on for this device from the notifications page (the
// browser's PushSubscription, faked at the edge, is pushtest's), sees it
// in their list as this device, sends a test that Parley really pushes
// (VAPID checked, decrypted) and that the service worker at /sw.js shows,
// saves quiet hours in the browser's time zone and the e-mail choice, and
// removes the device, which also unsubscribes this browser.
func TestBrowserNotificationsPage(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{reach: true, quiet: true})
	ctx := e.browser(t)
	sub := e.reach.push.Subscribe()
	pb := newPushBrowser(t, ctx, e.web.URL, sub)
	var name string
	var wide int
	step(t, ctx, "open the notifications page on a phone",
		emulation.SetTimezoneOverride("Europe/Berlin"),
		chromedp.EmulateViewport(375, 812, chromedp.EmulateScale(2), chromedp.EmulateMobile),
		chromedp.Navigate(e.web.URL+"/"),
		chromedp.Click(`#nav-toggle`, chromedp.ByID), // on a phone the header's links are behind its Menu
		chromedp.Click(`.user-nav a[href="/notifications"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#push-enable`, chromedp.ByID),
		chromedp.WaitReady(pushReady, chromedp.ByQuery),
		chromedp.Value(`#push-name`, &name, chromedp.ByID),
		chromedp.Evaluate(`document.documentElement.scrollWidth`, &wide),
	)
	if !strings.Contains(name, " on ") {
		t.Errorf("the device name is prefilled with %q, want a browser and a system", name)
	}
	if wide > 375 {
		t.Errorf("the page is %d px wide on a 375 px screen", wide)
	}
	var png []byte
	step(t, ctx, "turn notifications on",
		chromedp.SetValue(`#push-name`, "Test phone", chromedp.ByID),
		chromedp.Click(`#push-enable`, chromedp.ByID),
		chromedp.Poll(`document.getElementById("push-status").textContent.includes("Notifications are on for Test phone")`, nil),
		chromedp.WaitVisible(`#push-on`, chromedp.ByID),
		chromedp.WaitNotVisible(`#push-form`, chromedp.ByID),
		chromedp.WaitVisible(`#devices .device .this-device`, chromedp.ByQuery),
		chromedp.FullScreenshot(&png, 100),
	)
	_ = os.WriteFile(filepath.Join(artefactDir(t), "notifications-375.png"), png, 0o644)
	ds, err := e.st.PushDevices(t.Context(), e.user.ID)
	if err != nil || len(ds) != 1 {
		t.Fatalf("devices = %+v, %v; want the one just added", ds, err)
	}
	if d := ds[0]; d.Endpoint != sub.Endpoint || d.P256dh != sub.P256dh || d.Auth != sub.Auth || d.Name != "Test phone" {
		t.Errorf("device = %+v, want the browser's subscription named Test phone", d)
	}
	row := `#device-` + strconv.FormatInt(ds[0].ID, 10)

	step(t, ctx, "send a test", chromedp.Click(row+` .push-test`, chromedp.ByQuery),
		chromedp.Poll(`document.getElementById("push-status").textContent.includes("Test sent to Test phone")`, nil))
	p, m := e.nextPush(30 * time.Second)
	if m.Title != "Parley test notification" {
		t.Errorf("the test push is %+v", m)
	}
	pb.deliver(t, p.Payload) // what the push service would hand the browser
	ns := pb.waitNotification(t, "Parley test notification")
	if len(ns) != 1 || ns[0].Body != "Notifications work on this device." || len(ns[0].Actions) != 0 {
		t.Errorf("shown = %+v, want the test with no answering action", ns)
	}

	var from string
	var mail bool
	step(t, ctx, "save quiet hours and e-mail",
		chromedp.SetValue(`#quiet_from`, "22:00", chromedp.ByID),
		chromedp.SetValue(`#quiet_to`, "07:30", chromedp.ByID),
		chromedp.Click(`#email_asks`, chromedp.ByID),
		chromedp.Submit(`#notify-form`, chromedp.ByID),
		chromedp.WaitVisible(`.notifications .banner.ok`, chromedp.ByQuery),
		chromedp.WaitReady(pushReady, chromedp.ByQuery),
		chromedp.Value(`#quiet_from`, &from, chromedp.ByID),
		chromedp.Evaluate(`document.getElementById("email_asks").checked`, &mail),
	)
	if from != "22:00" || !mail {
		t.Errorf("the saved page shows quiet hours from %q and e-mail %v", from, mail)
	}
	u, err := e.st.UserReachOf(t.Context(), e.user.ID)
	if err != nil || u.QuietFrom != "22:00" || u.QuietTo != "07:30" || u.TZ != "Europe/Berlin" || !u.EmailAsks {
		t.Errorf("saved = %+v, %v; want 22:00-07:30 Europe/Berlin with e-mail", u, err)
	}

	var left string
	step(t, ctx, "remove the device",
		chromedp.Click(row+` .push-remove`, chromedp.ByQuery),
		chromedp.WaitNotPresent(row, chromedp.ByQuery),
		chromedp.Poll(`document.getElementById("push-status").textContent.includes("Removed Test phone")`, nil),
		chromedp.WaitVisible(`#push-enable`, chromedp.ByID),
		chromedp.WaitVisible(`#no-devices`, chromedp.ByID),
		chromedp.Evaluate(`String(localStorage.getItem("test-push-subscription"))`, &left),
	)
	if left != "null" {
		t.Errorf("after Remove this browser is still subscribed: %s", left)
	}
	if ds, _ := e.st.PushDevices(t.Context(), e.user.ID); len(ds) != 0 {
		t.Errorf("after Remove the store has %+v", ds)
	}
}

// TestBrowserNotificationsPageStates: a browser without Web Push, and one
// where the person blocked notifications, each get a sentence saying so
// (and how to unblock) instead of a button that cannot work.
func TestBrowserNotificationsPageStates(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{reach: true, quiet: true})
	ctx := e.browser(t)
	var text string
	step(t, ctx, "block notifications",
		chromedp.ActionFunc(func(ctx context.Context) error {
			return cdpbrowser.SetPermission(&cdpbrowser.PermissionDescriptor{Name: "notifications"}, cdpbrowser.PermissionSettingDenied).
				WithOrigin(e.web.URL).Do(ctx)
		}),
		chromedp.Navigate(e.web.URL+"/notifications"),
		chromedp.WaitVisible(`#push-denied`, chromedp.ByID),
		chromedp.WaitNotVisible(`#push-form`, chromedp.ByID),
		chromedp.Text(`#push-denied`, &text, chromedp.ByID),
	)
	if !strings.Contains(text, "set Notifications to Allow") {
		t.Errorf("blocked: %q does not say how to allow them again", text)
	}
	step(t, ctx, "a browser without Web Push",
		chromedp.ActionFunc(func(ctx context.Context) error {
			_, err := page.AddScriptToEvaluateOnNewDocument(`delete window.PushManager;`).Do(ctx)
			return err
		}),
		chromedp.Navigate(e.web.URL+"/notifications"),
		chromedp.WaitVisible(`#push-unsupported`, chromedp.ByID),
		chromedp.WaitNotVisible(`#push-form`, chromedp.ByID),
	)
}

// TestBrowserPushNotificationAnswersTheAsk is issue 30's push path in a
// real browser: nobody looks at the session, so Parley pushes the ask
// (VAPID, encrypted for the device) to the device the page turned on; the
// service worker at /sw.js shows it with the question's two options, its
// Green action answers through the single-use token with no cookie (the
// open page adds no notification of its own for it), the
// notification then says the server's "Answered.", the real CLI gets
// the answer, and the take-back push replaces it with "Answered by". A
// stale copy's action then shows the server's refusal.
func TestBrowserPushNotificationAnswersTheAsk(t *testing.T) {
	e := newEnv(t, colourScenario(), envOptions{reach: true, quiet: true})
	ctx := e.browser(t)
	pb := newPushBrowser(t, ctx, e.web.URL, e.reach.push.Subscribe())
	step(t, ctx, "turn notifications on",
		chromedp.Navigate(e.web.URL+"/notifications"),
		chromedp.WaitReady(pushReady, chromedp.ByQuery),
		chromedp.Click(`#push-enable`, chromedp.ByID),
		chromedp.WaitVisible(`#push-on`, chromedp.ByID),
	)
	sess := e.newSession()
	w := e.dial(sess.ID, 0) // a socket that never reports visible: nobody is looking
	w.prompt("pick a colour")
	p0, m := e.nextPush(60 * time.Second)
	if m.Type != reach.TypeAsk {
		t.Fatalf("push = %+v, want the ask", m)
	}
	p := p0
	pb.deliver(t, p.Payload)
	ns := pb.waitNotification(t, m.Title)
	got, _ := json.Marshal(ns)
	if len(ns) != 1 || ns[0].Tag != m.InputID || ns[0].Body != "Which colour?" || len(ns[0].Actions) != 2 ||
		ns[0].Actions[1].Action != "choice:1" || ns[0].Actions[1].Title != "Green" {
		t.Fatalf("shown: %s; want the question with Blue and Green", got)
	}
	pb.click(t, m.InputID, "choice:1")
	ns = pb.waitNotification(t, "Answered.")
	if len(ns) != 1 || ns[0].Tag != m.InputID {
		t.Errorf("after the action: %+v, want the ask's notification replaced", ns)
	}
	w.waitFor(60*time.Second, "Green it is.")
	if got, _ := e.lastToolResult(2); !strings.Contains(got, "User selected: Green") {
		t.Errorf("the model got %q, want the notification's answer", got)
	}
	if own := pb.pageNotifications(t); len(own) != 0 {
		t.Errorf("the page also showed its own notifications %q: the ask reached this browser twice", own)
	}
	p, back := e.nextPush(30 * time.Second)
	if back.Type != reach.TypeAnswered {
		t.Fatalf("take-back = %+v", back)
	}
	pb.deliver(t, p.Payload)
	ns = pb.waitNotification(t, "Answered by you")
	if len(ns) != 1 || ns[0].Tag != m.InputID || ns[0].Body != "from "+back.Via {
		t.Errorf("after the take-back: %+v, want one notification: Answered by you, from %s", ns, back.Via)
	}

	// A stale copy of the ask (a second device's, say): its action says why
	// it cannot answer, in the server's words, and the model got one answer.
	pb.deliver(t, p0.Payload)
	pb.waitNotification(t, m.Title)
	pb.click(t, m.InputID, "choice:0")
	ns = pb.waitNotification(t, "")
	if len(ns) != 1 || !(strings.HasPrefix(ns[0].Title, "This link has expired") || ns[0].Title == "Already answered by you.") {
		t.Errorf("a spent token's action shows %+v, want the server's refusal", ns)
	}
	if n := len(e.fake.Requests()); n != 2 {
		t.Errorf("the model got %d requests, want 2 (one answer)", n)
	}
}

// TestBrowserPushSubscriptionChange: when the push service replaces this
// browser's subscription (pushsubscriptionchange), the service worker
// registers the new one with Parley by itself, signed in through the
// browser's cookie and the CSRF token of a page it fetches.
func TestBrowserPushSubscriptionChange(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{reach: true, quiet: true})
	ctx := e.browser(t)
	pb := newPushBrowser(t, ctx, e.web.URL, e.reach.push.Subscribe())
	step(t, ctx, "turn notifications on",
		chromedp.Navigate(e.web.URL+"/notifications"),
		chromedp.WaitReady(pushReady, chromedp.ByQuery),
		chromedp.Click(`#push-enable`, chromedp.ByID),
		chromedp.WaitVisible(`#push-on`, chromedp.ByID),
	)
	renewed := e.reach.push.Subscribe()
	pb.changeSubscription(t, renewed)
	deadline := time.Now().Add(15 * time.Second)
	for {
		ds, err := e.st.PushDevices(t.Context(), e.user.ID)
		if err != nil {
			t.Fatal(err)
		}
		if i := slices.IndexFunc(ds, func(d store.PushDevice) bool { return d.Endpoint == renewed.Endpoint }); i >= 0 {
			if d := ds[i]; d.P256dh != renewed.P256dh || d.Auth != renewed.Auth {
				t.Errorf("renewed device = %+v, want the new keys", d)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after pushsubscriptionchange the devices are %+v; want the new endpoint", ds)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
