package server

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"parley/reach"
	"parley/store"
)

// TestReachStarterThenEscalation: with the "starter" rule, the ask of a
// turn Bob started reaches Bob's phone first, and only his; nobody
// answers, so after EscalateAfter (2 s) the other members' phones get it,
// not before.
func TestReachStarterThenEscalation(t *testing.T) {
	e := newReachTestEnv(t, func(pr *store.ProjectReach) { pr.FirstReach, pr.EscalateAfter = "starter", 2 })
	bob := e.member("bob@example.com", "Bob", roleMember)
	carol := e.member("carol@example.com", "Carol", roleMember)
	mine, bobs, carols := e.subscribe(e.user, "phone"), e.subscribe(bob, "phone"), e.subscribe(carol, "phone")
	sess := e.newSession()
	e.dialAs(bob, sess.ID, 0).prompt("pick a colour")
	in := e.pendingAsk(sess.ID)

	first, m := e.pushTo(bobs.Endpoint, "Bob's", 30*time.Second)
	if m.Token == "" {
		t.Errorf("Bob's push has no answer token: %+v", m)
	}
	second, _ := e.nextPush(10 * time.Second)
	third, _ := e.nextPush(10 * time.Second)
	if !sameSet([]string{second.Endpoint, third.Endpoint}, []string{mine.Endpoint, carols.Endpoint}) {
		t.Fatalf("the escalation went to %s and %s, want your and Carol's devices", second.Endpoint, third.Endpoint)
	}
	for _, p := range []time.Time{second.At, third.At} {
		if p.Sub(in.CreatedAt) < 2*time.Second {
			t.Errorf("escalated %s after the ask opened, before EscalateAfter (2 s)", p.Sub(in.CreatedAt))
		}
		if !first.At.Before(p) {
			t.Errorf("Bob's push (%s) came after the escalation (%s)", first.At, p)
		}
	}
	ds := e.waitDeliveries(in.ID, 5*time.Second, func(ds []store.Delivery) bool { return countOutcome(ds, "sent") == 3 })
	if !strings.HasPrefix(ds[0].Target, "Bob") {
		t.Errorf("deliveries: %s; want Bob's first", showDeliveries(ds))
	}
}

// TestReachNamed: the "named" rule reaches the people named (Carol), not
// the member who asked; with no escalation nobody else is pushed.
func TestReachNamed(t *testing.T) {
	e := newEnv(t, colourScenario(), envOptions{reach: true, quiet: true})
	carol := e.member("carol@example.com", "Carol", roleMember)
	e.setReach(func(pr *store.ProjectReach) {
		pr.FirstReach, pr.Named, pr.EscalateAfter = "named", []int64{carol.ID}, 0
	})
	e.subscribe(e.user, "phone")
	carols := e.subscribe(carol, "phone")
	sess := e.newSession()
	e.dial(sess.ID, 0).prompt("pick a colour")
	in := e.pendingAsk(sess.ID)
	e.pushTo(carols.Endpoint, "Carol's", 30*time.Second)
	e.noPush(2*time.Second, "only Carol is named")
	ds := e.waitDeliveries(in.ID, 0, func([]store.Delivery) bool { return true })
	if len(ds) != 1 || !hasDelivery(ds, "push", "sent", "Carol") {
		t.Errorf("deliveries: %s; want one, to Carol", showDeliveries(ds))
	}
}

// TestReachQuietHours: every member is reached at once, but you are in
// your quiet hours: Bob's phone gets the ask, yours does not, and a
// "quiet" delivery says why.
func TestReachQuietHours(t *testing.T) {
	e := newReachTestEnv(t, func(pr *store.ProjectReach) { pr.FirstReach, pr.EscalateAfter = "all", 0 })
	bob := e.member("bob@example.com", "Bob", roleMember)
	if err := e.st.SetUserReach(t.Context(), e.user.ID, quietAroundNow()); err != nil {
		t.Fatal(err)
	}
	e.subscribe(e.user, "phone")
	bobs := e.subscribe(bob, "phone")
	sess := e.newSession()
	e.dial(sess.ID, 0).prompt("pick a colour")
	in := e.pendingAsk(sess.ID)
	e.pushTo(bobs.Endpoint, "Bob's", 30*time.Second)
	e.noPush(2*time.Second, "you are in your quiet hours")
	ds := e.waitDeliveries(in.ID, 0, func([]store.Delivery) bool { return true })
	if !hasDelivery(ds, "push", "quiet", "you") || countOutcome(ds, "sent") != 1 {
		t.Errorf("deliveries: %s; want 'quiet' for you and one 'sent' to Bob", showDeliveries(ds))
	}
}

// TestReachViewerDeviceOnlyOpens: a viewer named in the routing is told of
// the ask with only "Open" (no token, no answer URL); the members who may
// answer are reached at once with theirs. A forged or unknown token is
// refused with 403, an action the ask does not offer with 400 (the token
// still works after), and the member's token answers.
func TestReachViewerDeviceOnlyOpens(t *testing.T) {
	e := newEnv(t, colourScenario(), envOptions{reach: true, quiet: true})
	vic := e.member("vic@example.com", "Vic", roleViewer)
	e.setReach(func(pr *store.ProjectReach) {
		pr.FirstReach, pr.Named, pr.EscalateAfter = "named", []int64{vic.ID}, 0
	})
	mine, vics := e.subscribe(e.user, "phone"), e.subscribe(vic, "phone")
	sess := e.newSession()
	w := e.dial(sess.ID, 0)
	w.prompt("pick a colour")
	e.pendingAsk(sess.ID)
	byEndpoint := map[string]reach.Message{}
	for range 2 {
		p, m := e.nextPush(30 * time.Second)
		byEndpoint[p.Endpoint] = m
	}
	vm, ok := byEndpoint[vics.Endpoint]
	if !ok || vm.Token != "" || vm.AnswerURL != "" || len(vm.Actions) != 1 || vm.Actions[0].ID != reach.ActOpen {
		t.Errorf("the viewer's push = %s, want only Open and no token", asJSON(vm))
	}
	mm, ok := byEndpoint[mine.Endpoint]
	if !ok || mm.Token == "" || len(mm.Actions) != 2 {
		t.Fatalf("your push = %s, want the ask's actions and a token", asJSON(mm))
	}

	for _, tok := range []string{"forged", strings.Repeat("A", len(mm.Token)), mm.Token[:len(mm.Token)-2] + "xy"} {
		res, err := http.PostForm(e.web.URL+"/reach/answer", url.Values{"token": {tok}, "action": {"choice:0"}})
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusForbidden {
			t.Errorf("token %q: %s, want 403", tok, res.Status)
		}
	}
	if code, text := e.answerWithToken(mm, reach.ActOpen); code != http.StatusBadRequest {
		t.Errorf("action open: %d %q, want 400", code, text)
	}
	if code, text := e.answerWithToken(mm, "choice:1"); code != http.StatusOK {
		t.Fatalf("your token after the refusals: %d %q, want 200", code, text)
	}
	w.waitFor(60*time.Second, "Green it is.")
	e.wantModelGot("User selected: Green")
}

// TestReachSkipsDeactivated: every member is reached at once, but Carol's
// account is deactivated: only your phone gets the ask, hers nothing.
func TestReachSkipsDeactivated(t *testing.T) {
	e := newEnv(t, colourScenario(), envOptions{reach: true, quiet: true})
	carol := e.member("carol@example.com", "Carol", roleMember)
	e.setReach(func(pr *store.ProjectReach) { pr.FirstReach, pr.EscalateAfter = "all", 0 })
	mine := e.subscribe(e.user, "phone")
	e.subscribe(carol, "phone")
	if err := e.st.SetDeactivated(t.Context(), carol.ID, true); err != nil {
		t.Fatal(err)
	}
	sess := e.newSession()
	e.dial(sess.ID, 0).prompt("pick a colour")
	e.pushTo(mine.Endpoint, "your", 30*time.Second)
	e.noPush(2*time.Second, "Carol is deactivated")
}

// TestReachQuietHoursInTheirZone: quiet hours are the person's local
// time: yours are set around now in Tokyo (nine hours off UTC), so your
// phone stays quiet; Bob's, the same clock times in UTC, are not now.
func TestReachQuietHoursInTheirZone(t *testing.T) {
	e := newReachTestEnv(t, func(pr *store.ProjectReach) { pr.FirstReach, pr.EscalateAfter = "all", 0 })
	bob := e.member("bob@example.com", "Bob", roleMember)
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Skip("no tz database:", err)
	}
	now := time.Now().In(tokyo)
	mine := store.UserReach{QuietFrom: now.Add(-time.Hour).Format("15:04"), QuietTo: now.Add(time.Hour).Format("15:04"), TZ: "Asia/Tokyo"}
	bobsQuiet := mine
	bobsQuiet.TZ = "UTC"
	if err := e.st.SetUserReach(t.Context(), e.user.ID, mine); err != nil {
		t.Fatal(err)
	}
	if err := e.st.SetUserReach(t.Context(), bob.ID, bobsQuiet); err != nil {
		t.Fatal(err)
	}
	e.subscribe(e.user, "phone")
	bobs := e.subscribe(bob, "phone")
	sess := e.newSession()
	e.dial(sess.ID, 0).prompt("pick a colour")
	in := e.pendingAsk(sess.ID)
	e.pushTo(bobs.Endpoint, "Bob's", 30*time.Second)
	e.noPush(2*time.Second, "it is your quiet time in Tokyo")
	ds := e.waitDeliveries(in.ID, 0, func([]store.Delivery) bool { return true })
	if !hasDelivery(ds, "push", "quiet", "you") || hasDelivery(ds, "push", "quiet", "Bob") {
		t.Errorf("deliveries: %s; want 'quiet' for you alone", showDeliveries(ds))
	}
}
