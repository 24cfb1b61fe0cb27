package server

import (
	"net/http"
	"testing"
	"time"

	"parley/reach"
	"parley/store"
)

// TestReachNoEscalationOnceAnswered: Bob, who started the turn, answers
// from his phone at once; the escalation (2 s) never comes: nobody else
// is pushed, only Bob's phone is told who answered.
func TestReachNoEscalationOnceAnswered(t *testing.T) {
	e := newReachTestEnv(t, func(pr *store.ProjectReach) { pr.FirstReach, pr.EscalateAfter = "starter", 2 })
	bob := e.member("bob@example.com", "Bob", roleMember)
	e.subscribe(e.user, "phone")
	bobs := e.subscribe(bob, "phone")
	sess := e.newSession()
	bw := e.dialAs(bob, sess.ID, 0)
	bw.prompt("pick a colour")
	in := e.pendingAsk(sess.ID)
	_, m := e.pushTo(bobs.Endpoint, "Bob's", 30*time.Second)
	if code, text := e.answerWithToken(m, "choice:1"); code != http.StatusOK {
		t.Fatalf("Bob's answer: %d %q", code, text)
	}
	_, back := e.pushTo(bobs.Endpoint, "Bob's", 10*time.Second)
	if back.Type != reach.TypeAnswered || back.By != "Bob" {
		t.Errorf("take-back = %s, want answered by Bob", asJSON(back))
	}
	wait := time.Until(in.CreatedAt.Add(3 * time.Second))
	e.noPush(max(wait, time.Second), "the ask was answered before the escalation")
	ds := e.waitDeliveries(in.ID, 0, func([]store.Delivery) bool { return true })
	if len(ds) != 1 {
		t.Errorf("deliveries: %s; want Bob's alone", showDeliveries(ds))
	}
}

// TestReachEscalationSuppressedWhileLooking: Bob's phone gets the ask
// first; before the escalation (2 s) you open the session and look, so
// the escalation pushes nobody (recorded as suppressed, naming you) while
// you look; once your page is hidden it reaches your phone, and Bob's
// phone is not pushed twice.
func TestReachEscalationSuppressedWhileLooking(t *testing.T) {
	e := newReachTestEnv(t, func(pr *store.ProjectReach) { pr.FirstReach, pr.EscalateAfter = "starter", 2 })
	bob := e.member("bob@example.com", "Bob", roleMember)
	mine, bobs := e.subscribe(e.user, "phone"), e.subscribe(bob, "phone")
	sess := e.newSession()
	e.dialAs(bob, sess.ID, 0).prompt("pick a colour")
	in := e.pendingAsk(sess.ID)
	e.pushTo(bobs.Endpoint, "Bob's", 30*time.Second)
	w := e.dial(sess.ID, 0)
	w.visible(true)
	e.waitDeliveries(in.ID, 10*time.Second, func(ds []store.Delivery) bool {
		return hasDelivery(ds, "push", "suppressed", "you")
	})
	e.noPush(time.Second, "you are looking at the ask")
	w.visible(false)
	e.pushTo(mine.Endpoint, "your", 10*time.Second)
	e.noPush(time.Second, "the escalation reaches the rest, not Bob again")
}

// TestReachTokenOfADemotedMember: Bob's phone got the ask with his
// token; an owner makes him a viewer before he taps. The token answers
// nothing (the page's role check), says why, and the ask stays pending.
func TestReachTokenOfADemotedMember(t *testing.T) {
	e := newReachTestEnv(t, func(pr *store.ProjectReach) { pr.FirstReach, pr.EscalateAfter = "starter", 0 })
	bob := e.member("bob@example.com", "Bob", roleMember)
	bobs := e.subscribe(bob, "phone")
	sess := e.newSession()
	e.dialAs(bob, sess.ID, 0).prompt("pick a colour")
	in := e.pendingAsk(sess.ID)
	_, m := e.pushTo(bobs.Endpoint, "Bob's", 30*time.Second)
	if err := e.st.SetMember(t.Context(), e.project.ID, bob.ID, roleViewer); err != nil {
		t.Fatal(err)
	}
	code, text := e.answerWithToken(m, "choice:1")
	t.Logf("a demoted member's token: %d %q", code, text)
	if code == http.StatusOK || code >= 500 || text == "" {
		t.Errorf("a viewer's token: %d %q, want a refusal that says why", code, text)
	}
	if s := e.askStatus(in.ID); s != "pending" {
		t.Errorf("the ask is %s after a viewer's token, want pending", s)
	}
}
