package server

import (
	"slices"
	"testing"
	"time"

	"parley/store"
)

// TestReachSuppressedWhileLooking: the member who asked has the session
// on a visible page, so nobody is pushed (a "suppressed" delivery names
// her, once); when the page reports hidden, the ask goes out to every
// device.
func TestReachSuppressedWhileLooking(t *testing.T) {
	e := newReachTestEnv(t, func(pr *store.ProjectReach) { pr.FirstReach, pr.EscalateAfter = "all", 0 })
	bob := e.member("bob@example.com", "Bob", roleMember)
	mine, bobs := e.subscribe(e.user, "phone"), e.subscribe(bob, "phone")
	sess := e.newSession()
	w := e.dial(sess.ID, 0)
	w.visible(true)
	w.prompt("pick a colour")
	in := e.pendingAsk(sess.ID)
	e.waitDeliveries(in.ID, 10*time.Second, func(ds []store.Delivery) bool {
		return hasDelivery(ds, "push", "suppressed", "you")
	})
	e.noPush(2*time.Second, "you have the ask on a visible page")
	ds := e.waitDeliveries(in.ID, 0, func([]store.Delivery) bool { return true })
	if n := countOutcome(ds, "suppressed"); n != 1 || len(ds) != 1 {
		t.Errorf("deliveries while looking: %s; want one 'suppressed'", showDeliveries(ds))
	}

	w.visible(false)
	got := []string{e.nextPushEndpoint(10 * time.Second), e.nextPushEndpoint(10 * time.Second)}
	if !sameSet(got, []string{mine.Endpoint, bobs.Endpoint}) {
		t.Errorf("pushes went to %v, want your and Bob's devices", got)
	}
	e.waitDeliveries(in.ID, 5*time.Second, func(ds []store.Delivery) bool { return countOutcome(ds, "sent") == 2 })
}

// TestReachSuppressionEndsWhenThePageCloses: a peer who may answer looks
// at the session, so the asker's phone stays quiet; the peer closes the
// tab (no "hidden" report, the socket just ends) and the ask reaches the
// asker.
func TestReachSuppressionEndsWhenThePageCloses(t *testing.T) {
	e := newReachTestEnv(t, func(pr *store.ProjectReach) { pr.EscalateAfter = 0 })
	bob := e.member("bob@example.com", "Bob", roleMember)
	mine := e.subscribe(e.user, "phone")
	e.subscribe(bob, "phone")
	sess := e.newSession()
	bw := e.dialAs(bob, sess.ID, 0)
	bw.visible(true)
	w := e.dial(sess.ID, 0)
	w.visible(false)
	w.prompt("pick a colour")
	in := e.pendingAsk(sess.ID)
	e.waitDeliveries(in.ID, 10*time.Second, func(ds []store.Delivery) bool {
		return hasDelivery(ds, "push", "suppressed", "Bob")
	})
	e.noPush(2*time.Second, "Bob has the ask on a visible page")

	bw.conn.Close()
	e.pushTo(mine.Endpoint, "your", 10*time.Second)
	e.noPush(time.Second, "the starter rule reaches only you first")
}

// TestReachOpenSocketDoesNotSuppress: an open socket proves nothing. The
// asker's own page never reported visible, a peer's reported hidden, and a
// viewer (who may not answer) looks: the ask is pushed, nothing is
// suppressed. (A peer's push was broken for months because the viewer's
// own socket counted as present.)
func TestReachOpenSocketDoesNotSuppress(t *testing.T) {
	e := newReachTestEnv(t, func(pr *store.ProjectReach) { pr.EscalateAfter = 0 })
	bob := e.member("bob@example.com", "Bob", roleMember)
	vic := e.member("vic@example.com", "Vic", roleViewer)
	mine := e.subscribe(e.user, "phone")
	sess := e.newSession()
	e.dialAs(bob, sess.ID, 0).visible(false)
	e.dialAs(vic, sess.ID, 0).visible(true)
	w := e.dial(sess.ID, 0)
	w.prompt("pick a colour")
	in := e.pendingAsk(sess.ID)
	e.pushTo(mine.Endpoint, "your", 30*time.Second)
	ds := e.waitDeliveries(in.ID, 5*time.Second, func(ds []store.Delivery) bool { return countOutcome(ds, "sent") == 1 })
	if n := countOutcome(ds, "suppressed"); n != 0 {
		t.Errorf("deliveries: %s; want none suppressed", showDeliveries(ds))
	}
}

func countOutcome(ds []store.Delivery, outcome string) int {
	n := 0
	for _, d := range ds {
		if d.Outcome == outcome {
			n++
		}
	}
	return n
}

// nextPushEndpoint waits for the next push and returns where it went.
func (e *env) nextPushEndpoint(timeout time.Duration) string {
	e.t.Helper()
	p, _ := e.nextPush(timeout)
	return p.Endpoint
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// TestReachInboxLookingSuppresses: a visible inbox shows every ask of its
// projects, so it suppresses like the session's page; a visible page of
// another session of the project does not.
func TestReachInboxLookingSuppresses(t *testing.T) {
	e := newReachTestEnv(t, func(pr *store.ProjectReach) { pr.FirstReach, pr.EscalateAfter = "all", 0 })
	bob := e.member("bob@example.com", "Bob", roleMember)
	mine := e.subscribe(e.user, "phone")
	e.subscribe(bob, "phone")
	sess, elsewhere := e.newSession(), e.newSession()
	e.dial(elsewhere.ID, 0).visible(true)
	inbox := e.dialPathAs(bob, "/inbox/ws?list=1")
	inbox.visible(true)
	w := e.dial(sess.ID, 0)
	w.prompt("pick a colour")
	in := e.pendingAsk(sess.ID)
	ds := e.waitDeliveries(in.ID, 10*time.Second, func(ds []store.Delivery) bool {
		return hasDelivery(ds, "push", "suppressed", "")
	})
	if !hasDelivery(ds, "push", "suppressed", "Bob") || hasDelivery(ds, "push", "suppressed", "you") {
		t.Errorf("deliveries: %s; want suppressed by Bob's inbox alone (your page shows another session)", showDeliveries(ds))
	}
	e.noPush(2*time.Second, "Bob's inbox shows the ask")
	inbox.visible(false)
	got := []string{e.nextPushEndpoint(10 * time.Second), e.nextPushEndpoint(10 * time.Second)}
	if !slices.Contains(got, mine.Endpoint) {
		t.Errorf("pushes went to %v, want yours among them", got)
	}
}
