package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/backgroundservice"
	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/serviceworker"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"parley/reach/webpush"
)

// Web Push in headless Chromium. Offline, pushManager.subscribe cannot
// reach a push service, so the browser's PushManager is the fake at the
// edge: fakePushManager makes subscribe and getSubscription return a
// subscription the test chose (pushtest's, whose keys decrypt what Parley
// sends). Everything else is real: the page, the service worker at /sw.js,
// its notifications (CDP ServiceWorker.deliverPushMessage hands it a push
// as the push service would, without encryption), and its fetches.
//
// What the worker shows is watched through DevTools' Background Services
// record ("Notification displayed", "Push event completed"), not by
// polling getNotifications: Chromium's getNotifications drops stored
// notifications the platform does not list as displayed yet, so a poll
// racing a notification being shown deletes it (1 run in 5 did).

// pushBrowser is a browser tab on Parley with notifications allowed for
// the origin, the service-worker domain enabled and PushManager faked to
// hand out sub.
type pushBrowser struct {
	ctx    context.Context
	origin string
	regs   chan serviceworker.RegistrationID

	mu     sync.Mutex
	events []bgEvent     // the Background Services record, in order
	seen   int           // events before this were matched already
	more   chan struct{} // a new event arrived
}

// bgEvent is one entry of DevTools' Background Services record.
type bgEvent struct {
	Name, Tag string
	Meta      map[string]string // Title, Body; Payload; Status
}

func newPushBrowser(t testing.TB, ctx context.Context, origin string, sub webpush.Subscription) *pushBrowser {
	t.Helper()
	b := &pushBrowser{ctx: ctx, origin: origin, regs: make(chan serviceworker.RegistrationID, 16), more: make(chan struct{}, 1)}
	chromedp.ListenTarget(ctx, func(ev any) {
		switch e := ev.(type) {
		case *backgroundservice.EventBackgroundServiceEventReceived:
			b.record(e.BackgroundServiceEvent)
		case *serviceworker.EventWorkerRegistrationUpdated:
			for _, r := range e.Registrations {
				if !r.IsDeleted && r.ScopeURL == origin+"/" {
					select {
					case b.regs <- r.RegistrationID:
					default:
					}
				}
			}
		}
	})
	step(t, ctx, "allow notifications and fake the push service's subscription",
		cdpbrowser.SetPermission(&cdpbrowser.PermissionDescriptor{Name: "notifications"}, cdpbrowser.PermissionSettingGranted).WithOrigin(origin),
		serviceworker.Enable(),
		backgroundservice.StartObserving(backgroundservice.ServiceNameNotifications),
		backgroundservice.SetRecording(true, backgroundservice.ServiceNameNotifications),
		backgroundservice.StartObserving(backgroundservice.ServiceNamePushMessaging),
		backgroundservice.SetRecording(true, backgroundservice.ServiceNamePushMessaging),
		chromedp.ActionFunc(func(ctx context.Context) error {
			_, err := page.AddScriptToEvaluateOnNewDocument(fakePushManager(sub)).Do(ctx)
			return err
		}))
	return b
}

func (b *pushBrowser) record(e *backgroundservice.Event) {
	ev := bgEvent{Name: e.EventName, Tag: e.InstanceID, Meta: map[string]string{}}
	for _, m := range e.EventMetadata {
		ev.Meta[m.Key] = m.Value
	}
	b.mu.Lock()
	b.events = append(b.events, ev)
	b.mu.Unlock()
	select {
	case b.more <- struct{}{}:
	default:
	}
}

// fakePushManager is an init script: PushManager.subscribe resolves with
// sub (remembered in localStorage, so getSubscription finds it and
// unsubscribe forgets it). It also records the notifications a page makes
// itself (new Notification) for pageNotifications.
func fakePushManager(sub webpush.Subscription) string {
	j, _ := json.Marshal(map[string]any{"endpoint": sub.Endpoint, "expirationTime": nil,
		"keys": map[string]string{"p256dh": sub.P256dh, "auth": sub.Auth}})
	return fmt.Sprintf(`(() => {
  const KEY = "test-push-subscription", SUB = %s;
  // The page's own notifications (new Notification), recorded.
  const Page = window.Notification, OWN = "test-page-notifications";
  window.Notification = function (title, options) {
    const own = JSON.parse(localStorage.getItem(OWN) || "[]");
    localStorage.setItem(OWN, JSON.stringify(own.concat([title])));
    return new Page(title, options);
  };
  Object.defineProperty(window.Notification, "permission", { get: () => Page.permission });
  window.Notification.requestPermission = Page.requestPermission.bind(Page);
  const fake = (j) => ({ endpoint: j.endpoint, expirationTime: null, options: { userVisibleOnly: true },
    toJSON() { return j; },
    unsubscribe() { localStorage.removeItem(KEY); return Promise.resolve(true); } });
  PushManager.prototype.subscribe = function () {
    localStorage.setItem(KEY, JSON.stringify(SUB));
    return Promise.resolve(fake(SUB));
  };
  PushManager.prototype.getSubscription = function () {
    const s = localStorage.getItem(KEY);
    return Promise.resolve(s ? fake(JSON.parse(s)) : null);
  };
})();`, j)
}

// pageNotifications returns the titles of the notifications the page
// showed itself, not through the service worker.
func (b *pushBrowser) pageNotifications(t testing.TB) []string {
	t.Helper()
	var raw string
	step(t, b.ctx, "read the page's own notifications",
		chromedp.Evaluate(`localStorage.getItem("test-page-notifications") || "[]"`, &raw))
	var titles []string
	if err := json.Unmarshal([]byte(raw), &titles); err != nil {
		t.Fatalf("page notifications %s: %v", raw, err)
	}
	return titles
}

// registration waits for the service worker's registration at scope /.
func (b *pushBrowser) registration(t testing.TB) serviceworker.RegistrationID {
	t.Helper()
	select {
	case id := <-b.regs:
		b.regs <- id // later calls get it too
		return id
	case <-time.After(30 * time.Second):
		t.Fatal("no service worker registered at scope /")
		return ""
	}
}

// deliver hands the service worker a push, as its push service would.
func (b *pushBrowser) deliver(t testing.TB, payload []byte) {
	t.Helper()
	id := b.registration(t)
	step(t, b.ctx, "deliver a push to the service worker", serviceworker.DeliverPushMessage(b.origin, id, string(payload)))
}

// shownNotification is one notification the service worker shows.
type shownNotification struct {
	Title   string `json:"title"`
	Body    string `json:"body"`
	Tag     string `json:"tag"`
	Actions []struct {
		Action string `json:"action"`
		Title  string `json:"title"`
	} `json:"actions"`
	Data map[string]string `json:"data"`
}

// waitNotification waits until the worker displays a notification whose
// title has prefix (after those matched before), then returns every
// notification it shows.
func (b *pushBrowser) waitNotification(t testing.TB, prefix string) []shownNotification {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for !b.displayed(prefix) {
		select {
		case <-b.more:
		case <-deadline:
			b.mu.Lock()
			got, _ := json.Marshal(b.events[b.seen:])
			b.mu.Unlock()
			t.Fatalf("no notification %q displayed within 20 s; the worker's record: %s", prefix, got)
		}
	}
	var raw string
	step(t, b.ctx, "read the notifications", chromedp.Evaluate(`navigator.serviceWorker.ready.then(r => r.getNotifications()).then(ns =>
		JSON.stringify(ns.map(n => ({title: n.title, body: n.body, tag: n.tag,
			actions: n.actions.map(a => ({action: a.action, title: a.title})), data: n.data}))))`, &raw,
		func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }))
	var ns []shownNotification
	if err := json.Unmarshal([]byte(raw), &ns); err != nil {
		t.Fatalf("notifications %s: %v", raw, err)
	}
	return ns
}

// displayed reports whether a notification titled prefix… was displayed
// since the last match, and moves past it.
func (b *pushBrowser) displayed(prefix string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := b.seen; i < len(b.events); i++ {
		if e := b.events[i]; e.Name == "Notification displayed" && strings.HasPrefix(e.Meta["Title"], prefix) {
			b.seen = i + 1
			return true
		}
	}
	return false
}

// click acts on the shown notification tagged tag as a person's click
// would: a notificationclick event with the action ("" = the notification
// itself), dispatched inside the service worker (CDP has no way to click
// a notification).
func (b *pushBrowser) click(t testing.TB, tag, action string) {
	t.Helper()
	var ok bool
	b.inWorker(t, "click the notification", fmt.Sprintf(`self.registration.getNotifications({tag: %q}).then(ns => {
		if (!ns.length) return false;
		self.dispatchEvent(new NotificationEvent("notificationclick", {notification: ns[0], action: %q}));
		return true;
	})`, tag, action), &ok)
	if !ok {
		t.Fatalf("no notification tagged %q to click", tag)
	}
}

// changeSubscription tells the worker, as the browser would, that the
// push service replaced its subscription with sub (pushsubscriptionchange;
// the event is dispatched in the worker with sub's toJSON).
func (b *pushBrowser) changeSubscription(t testing.TB, sub webpush.Subscription) {
	t.Helper()
	j, _ := json.Marshal(map[string]any{"endpoint": sub.Endpoint, "expirationTime": nil,
		"keys": map[string]string{"p256dh": sub.P256dh, "auth": sub.Auth}})
	var ok bool
	b.inWorker(t, "change the subscription", fmt.Sprintf(`(() => {
		const ev = new Event("pushsubscriptionchange"), j = %s;
		ev.newSubscription = { endpoint: j.endpoint, toJSON: () => j };
		self.dispatchEvent(ev);
		return true;
	})()`, j), &ok)
}

// inWorker evaluates js in the service worker at /sw.js, awaiting a
// promise, into out.
func (b *pushBrowser) inWorker(t testing.TB, what, js string, out any) {
	t.Helper()
	infos, err := chromedp.Targets(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var sw target.ID
	for _, i := range infos {
		if i.Type == "service_worker" && i.URL == b.origin+"/sw.js" {
			sw = i.TargetID
		}
	}
	if sw == "" {
		t.Fatal("no service worker target")
	}
	// Not cancelled before the test ends: cancelling a chromedp context
	// closes its target, which stops the worker in the middle of its fetch.
	swctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithTargetID(sw))
	t.Cleanup(cancel)
	step(t, swctx, what, chromedp.Evaluate(js, out, func(p *runtime.EvaluateParams) *runtime.EvaluateParams {
		return p.WithAwaitPromise(true)
	}))
}
