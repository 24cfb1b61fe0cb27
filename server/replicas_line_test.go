package server

import (
	"syscall"
	"testing"
	"time"

	"parley/runner/fakeapi"
)

// lineItems counts the session's kept line items, and those released (no replica).
func (e *env) lineItems(sessionID string) (all, released int) {
	e.t.Helper()
	e.queryRow(`SELECT count(*), count(*) FILTER (WHERE replica_id = '') FROM session_line WHERE session_id = $1`,
		[]any{sessionID}, &all, &released)
	return all, released
}

// promptCount counts the prompts in the session's log.
func (e *env) promptCount(sessionID string) int {
	e.t.Helper()
	var n int
	e.queryRow(`SELECT count(*) FROM events WHERE session_id = $1 AND type = 'prompt'`, []any{sessionID}, &n)
	return n
}

// waitLineEmpty waits until the session has nothing left in line (what
// names what should have left it).
func (e *env) waitLineEmpty(sessionID, what string) {
	e.t.Helper()
	waitUntil(e.t, 10*time.Second, what+" out of the kept line", func() bool {
		all, _ := e.lineItems(sessionID)
		return all == 0
	})
}

// queuedBehindAnAsk starts replica A with one claude slot: a session's run
// waits on an ask while a second session's prompt waits in line for the
// slot, kept in session_line. It returns A and the two sessions' ids.
func (e *env) queuedBehindAnAsk(extra ...string) (a *replica, s1, s2 string) {
	e.t.Helper()
	a = e.startReplica("A", append([]string{"PARLEY_DRAIN_TIMEOUT=30", "PARLEY_MAX_RUNS=1"}, extra...)...)
	ss1, ss2 := e.newSession(), e.newSession()
	wa1 := e.dialReplica(a, e.user, ss1.ID)
	wa1.prompt("make k")
	e.waitInput(wa1, ss1.ID)
	var pid int
	e.queryRow(`SELECT pid FROM runs WHERE session_id = $1`, []any{ss1.ID}, &pid)
	e.t.Cleanup(func() { _ = syscall.Kill(-pid, syscall.SIGKILL) })
	wa2 := e.dialReplica(a, e.user, ss2.ID)
	wa2.prompt("queued behind the slot")
	wa2.waitFor(60*time.Second, "Waiting for a free slot")
	if all, _ := e.runsOf(ss2.ID); all != 0 {
		e.t.Fatalf("the queued session has %d runs, want none: A's only slot is taken", all)
	}
	if all, released := e.lineItems(ss2.ID); all != 1 || released != 0 {
		e.t.Fatalf("the queued session has %d kept line items (%d released), want its prompt, kept by A", all, released)
	}
	return a, ss1.ID, ss2.ID
}

// wantQueuedPromptOnce checks that the model got the queued prompt once,
// as the second of two requests, on replica r, and that nothing is left in line.
func (e *env) wantQueuedPromptOnce(r *replica, s2 string) {
	e.t.Helper()
	w := e.dialReplica(r, e.user, s2)
	w.waitFor(90*time.Second, "The queued prompt, answered after all.")
	reqs := e.fake.Requests()
	if len(reqs) != 2 {
		e.t.Fatalf("the model got %d requests, want 2", len(reqs))
	}
	if got := reqs[1].LastUserText(); got != "queued behind the slot" {
		e.t.Errorf("the second request ends with %q, want the queued prompt", got)
	}
	if prompts := e.promptCount(s2); prompts != 1 {
		e.t.Errorf("s2's log holds %d prompts, want the queued one once", prompts)
	}
	e.waitLineEmpty(s2, "the delivered prompt")
	if got := e.owner(s2); got != r.id {
		e.t.Errorf("owner of the queued session %q, want %s (%s)", got, r.name, r.id)
	}
	e.wantContiguousLog(s2)
}

// TestFaultRestartKeepsQueuedPrompt: the only replica is stopped (SIGTERM)
// while a prompt waits in line for its one claude slot. With no other
// replica to take it, the prompt stays in the database; the replica that
// starts next sends it to the model, once, and the other session's ask is
// still open.
func TestFaultRestartKeepsQueuedPrompt(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{bashStep("touch k"), {Text: "The queued prompt, answered after all."}},
		envOptions{quiet: true})
	a, s1, s2 := e.queuedBehindAnAsk()
	a.stop(syscall.SIGTERM)
	if all, released := e.lineItems(s2); all != 1 || released != 1 {
		t.Fatalf("after the shutdown s2 has %d kept line items, %d released; want its prompt, released", all, released)
	}
	a2 := e.startReplica("A2", "PARLEY_MAX_RUNS=1")
	e.wantQueuedPromptOnce(a2, s2)
	var status string
	e.queryRow(`SELECT status FROM inputs WHERE session_id = $1`, []any{s1}, &status)
	if status != "pending" {
		t.Errorf("s1's ask is %q, want still pending", status)
	}
}

// TestFaultCrashKeepsQueuedPrompt: the only replica is killed (SIGKILL)
// while a prompt waits in line. A replica started at once leaves it alone
// while the dead one's lease still stands, then, once it has lapsed, sends
// the prompt to the model, once.
func TestFaultCrashKeepsQueuedPrompt(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{bashStep("touch k"), {Text: "The queued prompt, answered after all."}},
		envOptions{quiet: true})
	a, _, s2 := e.queuedBehindAnAsk()
	a.stop(syscall.SIGKILL)
	a2 := e.startReplica("A2", "PARLEY_MAX_RUNS=1")
	e.wantQueuedPromptOnce(a2, s2)
	var deliveredBy string
	e.queryRow(`SELECT replica_id FROM runs WHERE session_id = $1`, []any{s2}, &deliveredBy)
	if deliveredBy != a2.id {
		t.Errorf("s2 ran on %q, want A2 (%s)", deliveredBy, a2.id)
	}
}

// TestFaultPausedReplicaLeavesClaimedWorkAlone: a replica is paused
// (SIGSTOP, with its claude) longer than its lease while a prompt waits in
// its line for its only slot. The other replica takes the line over and
// sends the prompt. When the paused one wakes, its heartbeat ends the run
// that held the slot (taken over meanwhile), and the prompt's turn comes:
// it sends nothing, as the prompt is no longer its own. The model gets the
// prompt once.
func TestFaultPausedReplicaLeavesClaimedWorkAlone(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{bashStep("touch k"), {Text: "The queued prompt, answered after all."}},
		envOptions{quiet: true})
	a, s1, s2 := e.queuedBehindAnAsk()
	b := e.startReplica("B")
	var pid int
	e.queryRow(`SELECT pid FROM runs WHERE session_id = $1`, []any{s1}, &pid)
	wake := a.pause(pid)
	defer wake()
	e.wantQueuedPromptOnce(b, s2)
	wake()
	a.waitLog(60*time.Second, "not sent here")
	if n := len(e.fake.Requests()); n != 2 {
		t.Errorf("the model got %d requests, want 2: the paused replica sent the prompt again", n)
	}
	if prompts := e.promptCount(s2); prompts != 1 {
		t.Errorf("s2's log holds %d prompts, want the queued one once", prompts)
	}
	e.wantContiguousLog(s2)
}
