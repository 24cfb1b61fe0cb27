package server

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"parley/runner/fakeapi"
)

// removeMember takes u out of the env's project through the settings page,
// as its owner does.
func (e *env) removeMember(owner, u *testUser) {
	e.t.Helper()
	resp := e.postAs(owner, fmt.Sprintf("/projects/%d/settings/members/%d/remove", e.project.ID, u.ID), nil)
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		e.t.Fatalf("removing %s: status %d, want 303", u.Name, resp.StatusCode)
	}
}

// interrupts lists who stopped each turn of the session that was stopped.
func (e *env) interrupts(sessionID string) []string {
	e.t.Helper()
	evs, err := e.st.EventsAfter(e.t.Context(), sessionID, 0, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	var by []string
	for _, ev := range evs {
		if ev.Type == "interrupt" {
			by = append(by, string(ev.Payload))
		}
	}
	return by
}

// interruptsStay checks for a second that the session has n interrupts
// and no more: a membership change (just made) stopped no other turn.
func (e *env) interruptsStay(sessionID string, n int, what string) {
	e.t.Helper()
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if got := e.interrupts(sessionID); len(got) != n {
			e.t.Fatalf("%s: interrupts %v", what, got)
		}
	}
}

// TestRemovedMemberTurnStops: a member removed from the project has no
// turn of theirs run on. Bob's running turn is stopped the moment he is
// removed (Carol's removal before leaves it alone), and the process lives
// on. Bob, added back, has his next turn run to its end, through another
// membership change. Dave's turn, queued in the CLI behind the owner's
// when Dave is removed, leaves the owner's turn alone and is stopped as it
// starts (the CLI may drop it before it asks the model). Every page says
// whose turn Parley stopped, and why.
func TestRemovedMemberTurnStops(t *testing.T) {
	bobs, bobsBack, owners, daves := make(chan struct{}), make(chan struct{}), make(chan struct{}), make(chan struct{})
	e := newEnv(t, fakeapi.Scenario{
		{Text: "Bob's long job", Hold: bobs},
		{Text: "Bob is back", Hold: bobsBack},
		{Text: "The owner's turn", Hold: owners},
		{Text: "Dave's turn", Hold: daves},
	}, envOptions{quiet: true})
	defer close(bobs)
	defer close(daves)
	olive := e.member("olive@example.com", "Olive", "owner")
	bob := e.member("bob@example.com", "Bob", "member")
	carol := e.member("carol@example.com", "Carol", "member")
	carol2 := e.member("carol2@example.com", "Carol Two", "member")
	dave := e.member("dave@example.com", "Dave", "member")
	s := e.newSession()
	wo := e.dialAs(olive, s.ID, 0)
	wb := e.dialAs(bob, s.ID, 0)
	wb.prompt("a long job")
	wo.waitFor(60*time.Second, "Bob&#39;s long job")

	e.removeMember(olive, carol)
	e.interruptsStay(s.ID, 0, "removing Carol, who started nothing, stopped Bob's turn")

	began := time.Now()
	e.removeMember(olive, bob)
	wo.waitFor(30*time.Second, "Parley stopped Bob&#39;s turn: Bob may no longer send messages in this project.")
	t.Logf("Bob's turn was stopped %s after his removal", time.Since(began).Round(time.Millisecond))
	waitUntil(t, 10*time.Second, "Bob's turn interrupted", func() bool { return len(e.interrupts(s.ID)) == 1 })
	if got := e.interrupts(s.ID); !strings.Contains(got[0], `"by": "Parley"`) {
		t.Fatalf("interrupts %v, want one by Parley", got)
	}
	wo.waitFor(30*time.Second, "interrupted") // the turn's end, as the page shows it

	// Bob, added back, prompts again: his turn runs, through another
	// membership change, to its end.
	if err := e.st.SetMember(t.Context(), e.project.ID, bob.ID, "member"); err != nil {
		t.Fatal(err)
	}
	wb2 := e.dialAs(bob, s.ID, 0)
	wb2.prompt("back again")
	wo.waitFor(60*time.Second, "Bob is back")
	e.removeMember(olive, carol2)
	e.interruptsStay(s.ID, 1, "a membership change after Bob was added back stopped his turn")
	close(bobsBack)
	waitUntil(t, 30*time.Second, "the end of Bob's turn after he was added back",
		func() bool { return count(e.eventTypes(s.ID), "result") == 2 })

	// The owner's turn runs; Dave's waits behind it in the CLI.
	wo.prompt("the owner's work")
	wo.waitFor(60*time.Second, "The owner&#39;s turn")
	wd := e.dialAs(dave, s.ID, 0)
	wd.prompt("Dave's work")
	wo.waitFor(10*time.Second, "Dave&#39;s work")
	e.removeMember(olive, dave)
	e.interruptsStay(s.ID, 1, "removing Dave, whose turn waits, stopped the owner's turn")
	close(owners)
	wo.waitFor(60*time.Second, "Parley stopped Dave&#39;s turn: Dave may no longer send messages in this project.")
	waitUntil(t, 10*time.Second, "Dave's turn interrupted", func() bool { return len(e.interrupts(s.ID)) == 2 })
	waitUntil(t, 30*time.Second, "the ends of Bob's two turns, the owner's and Dave's",
		func() bool { return count(e.eventTypes(s.ID), "result") == 4 })
}

// TestRemovedMemberQueuedPromptIsNotSent: a prompt that waits in line for
// the only claude slot is not sent once its author is removed; the page
// says so, and the model never sees it.
func TestRemovedMemberQueuedPromptIsNotSent(t *testing.T) {
	hold := make(chan struct{})
	e := newEnv(t, fakeapi.Scenario{{Text: "The owner is working", Hold: hold}}, envOptions{quiet: true, maxRuns: 1})
	olive := e.member("olive@example.com", "Olive", "owner")
	bob := e.member("bob@example.com", "Bob", "member")
	x, y := e.newSession(), e.newSession()
	wx := e.dialAs(olive, x.ID, 0)
	wx.prompt("work")
	wx.waitFor(60*time.Second, "The owner is working")
	wy := e.dialAs(olive, y.ID, 0)
	wb := e.dialAs(bob, y.ID, 0)
	wb.prompt("Bob's queued work")
	wy.waitFor(10*time.Second, "Waiting for a free slot")
	e.removeMember(olive, bob)
	close(hold) // x's turn ends; its idle run gives the slot to y
	wy.waitFor(60*time.Second, "Parley did not send Bob&#39;s message: Bob may no longer send messages in this project.")
	if n := len(e.fake.Requests()); n != 1 {
		t.Errorf("the model got %d requests, want the owner's only", n)
	}
	if n := count(e.eventTypes(y.ID), "prompt"); n != 0 {
		t.Errorf("y's log holds %d prompts, want none", n)
	}
	waitUntil(t, 10*time.Second, "Bob's refused prompt out of the kept line", func() bool {
		all, _ := e.lineItems(y.ID)
		return all == 0
	})
}

// TestFailedResumeDoesNotResendARemovedMembersTurn: a conversation the CLI
// cannot resume has its lost turn sent again to a fresh one — unless its
// author was removed meanwhile: the resent turn waited, and is checked
// like any turn that waited.
func TestFailedResumeDoesNotResendARemovedMembersTurn(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "Fresh start, message received."}}, envOptions{quiet: true})
	olive := e.member("olive@example.com", "Olive", "owner")
	bob := e.member("bob@example.com", "Bob", "member")
	s := e.newSession()
	if err := e.st.MarkClaudeStarted(t.Context(), s.ID); err != nil { // its transcript was never saved
		t.Fatal(err)
	}
	wo := e.dialAs(olive, s.ID, 0)
	wb := e.dialAs(bob, s.ID, 0)
	wb.prompt("are you there?")
	wo.waitFor(10*time.Second, "are you there?")
	e.removeMember(olive, bob)
	wo.waitFor(60*time.Second, "Claude could not resume the earlier conversation",
		"Parley did not send Bob&#39;s message: Bob may no longer send messages in this project.")
	time.Sleep(time.Second) // a resent turn would reach the model by now
	if n := len(e.fake.Requests()); n != 0 {
		t.Errorf("the model got %d requests, want none: Bob's turn was not sent again", n)
	}
}
