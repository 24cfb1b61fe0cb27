package server

import (
	"context"
	"testing"
	"time"

	"parley/runner/fakeapi"
	"parley/store"
)

// TestReachStarterIsTheAsksTurn: Bob starts a turn; while the model is
// still working on it you send a message too (written to the CLI at once,
// a "queued" prompt; this CLI folds it into Bob's turn). The ask that
// comes in Bob's turn reaches Bob, whose message started that turn, not
// you, whose message came last. Then Carol starts the next turn, and its
// ask reaches Carol.
func TestReachStarterIsTheAsksTurn(t *testing.T) {
	hold := make(chan struct{})
	e := newEnv(t, fakeapi.Scenario{
		{Text: "Let me ask.", ToolName: askTool, ToolInput: twoColours(), Hold: hold},
		{Text: "Green it is."},
		{Text: "Again.", ToolName: askTool, ToolInput: twoColours()},
		{Text: "Blue it is."},
	}, envOptions{reach: true, quiet: true})
	e.setReach(func(pr *store.ProjectReach) { pr.FirstReach, pr.EscalateAfter = "starter", 0 })
	bob := e.member("bob@example.com", "Bob", roleMember)
	carol := e.member("carol@example.com", "Carol", roleMember)
	e.subscribe(e.user, "phone")
	bobs, carols := e.subscribe(bob, "phone"), e.subscribe(carol, "phone")
	sess := e.newSession()
	bw := e.dialAs(bob, sess.ID, 0)
	bw.prompt("pick a colour")
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	if err := e.fake.WaitRequests(ctx, 1); err != nil {
		t.Fatal(err)
	}
	w := e.dial(sess.ID, 0)
	w.prompt("and make it quick")
	w.waitFor(30*time.Second, "and make it quick")
	close(hold)
	e.pendingAsk(sess.ID)
	_, m := e.pushTo(bobs.Endpoint, "Bob's", 30*time.Second)
	e.noPush(2*time.Second, "the ask is of Bob's turn")
	if code, text := e.answerWithToken(m, "choice:1"); code != 200 {
		t.Fatalf("Bob's answer: %d %q", code, text)
	}
	w.waitFor(60*time.Second, "Green it is.")
	e.pushTo(bobs.Endpoint, "Bob's", 10*time.Second) // answered by Bob

	e.dialAs(carol, sess.ID, 0).prompt("once more")
	e.pendingAsk(sess.ID)
	_, m = e.pushTo(carols.Endpoint, "Carol's", 30*time.Second)
	e.noPush(time.Second, "the second ask is of Carol's turn")
	if code, text := e.answerWithToken(m, "choice:0"); code != 200 {
		t.Fatalf("Carol's answer: %d %q", code, text)
	}
	w.waitFor(60*time.Second, "Blue it is.")
}
