package server

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"parley/runner/fakeapi"
)

// cutTurnScenario streams a reply for about 10 s, then answers the prompt
// that has Claude go on.
func cutTurnScenario() fakeapi.Scenario {
	return fakeapi.Scenario{
		{Text: strings.Repeat("streamed words ", 200) + "NEVER SEEN.", Chunks: 200, ChunkDelay: 50 * time.Millisecond},
		{Text: "Went on after the restart."},
	}
}

// cutTurn has replica a stream a long turn with a second prompt the CLI
// queued behind it, then stops a with sig: SIGTERM with a 1 s drain (the
// grace ends while the turn runs, and the drain cuts it off), or SIGKILL.
func (e *env) cutTurn(a *replica, sig syscall.Signal) (sessionID string) {
	e.t.Helper()
	s := e.newSession()
	wa := e.dialReplica(a, e.user, s.ID)
	wa.prompt("stream something long")
	wa.waitFor(90*time.Second, "streamed words")
	wa.prompt("and mind the tests")
	waitUntil(e.t, 30*time.Second, "the queued prompt in the log", func() bool { return e.promptCount(s.ID) == 2 })
	a.stop(sig)
	if n := len(e.fake.Requests()); n != 1 {
		e.t.Fatalf("before the drain the model got %d requests, want the long turn's only", n)
	}
	return s.ID
}

// wantWentOn checks that the turn a drain or a crash cut off went on, on
// replica r: the model was asked once more, to go on, and given the prompt
// the CLI had queued (which the CLI itself forgets); the page says what
// happened (notice) and shows the prompt as Parley's; the log marks it
// Parley's own; nothing is left in line.
func (e *env) wantWentOn(r *replica, sessionID, notice string) {
	e.t.Helper()
	w := e.dialReplica(r, e.user, sessionID)
	seen := w.waitFor(90*time.Second, notice)                       // the page says so, before…
	seen += w.waitFor(90*time.Second, "Went on after the restart.") // …the turn goes on
	reqs := e.fake.Requests()
	if len(reqs) != 2 {
		e.t.Fatalf("the model got %d requests, want 2: the cut turn, and the one that goes on", len(reqs))
	}
	got := reqs[1].LastUserText()
	for _, want := range []string{"Go on where you left off.", "From " + e.user.Name + ":\nand mind the tests"} {
		if !strings.Contains(got, want) {
			e.t.Errorf("the second request ends with %q, want it to hold %q", got, want)
		}
	}
	if prompts := e.promptCount(sessionID); prompts != 3 {
		e.t.Errorf("the log holds %d prompts, want 3: two sent, and the one that goes on", prompts)
	}
	// The one that goes on is marked Parley's own (not by its text), and
	// the page says whom Parley sent it for.
	var marks string
	e.queryRow(`SELECT string_agg(coalesce(payload->>'parley', 'false'), ',' ORDER BY seq) FROM events
		WHERE session_id = $1 AND type = 'prompt'`, []any{sessionID}, &marks)
	if marks != "false,false,true" {
		e.t.Errorf("the prompts' parley marks are %s, want false,false,true: the members' two, then Parley's", marks)
	}
	if who := `<div class="who">Parley, for ` + e.user.Name + `</div>`; !strings.Contains(seen, who) {
		e.t.Errorf("the page does not show %s", who)
	}
	e.waitLineEmpty(sessionID, "the prompt that went on")
	if n := len(e.fake.Requests()); n != 2 {
		e.t.Errorf("the model got %d requests once the line was empty, want 2: it went on once", n)
	}
	e.wantContiguousLog(sessionID)
}

// TestFaultReplicaSigtermGoesOnWithCutTurn: SIGTERM to a replica whose
// turn outlasts PARLEY_DRAIN_TIMEOUT cuts the turn off; the replica that
// takes the session over has Claude go on with it, with the message the
// team queued behind it.
func TestFaultReplicaSigtermGoesOnWithCutTurn(t *testing.T) {
	e := newEnv(t, cutTurnScenario(), envOptions{quiet: true})
	a := e.startReplica("A", "PARLEY_DRAIN_TIMEOUT=1")
	b := e.startReplica("B")
	s := e.cutTurn(a, syscall.SIGTERM)
	e.wantWentOn(b, s, drainNotice)
	if got := e.owner(s); got != b.id {
		t.Errorf("owner %q, want B (%s)", got, b.id)
	}
}

// TestFaultRestartGoesOnWithCutTurn: the same with no other replica. The
// prompt that goes on waits in the database, released, and the replica
// that starts next sends it.
func TestFaultRestartGoesOnWithCutTurn(t *testing.T) {
	e := newEnv(t, cutTurnScenario(), envOptions{quiet: true})
	a := e.startReplica("A", "PARLEY_DRAIN_TIMEOUT=1")
	s := e.cutTurn(a, syscall.SIGTERM)
	if all, released := e.lineItems(s); all != 1 || released != 1 {
		t.Fatalf("after the shutdown the session has %d kept line items, %d released; want the prompt that goes on, released", all, released)
	}
	a2 := e.startReplica("A2")
	e.wantWentOn(a2, s, drainNotice)
}

// TestFaultCrashGoesOnWithCutTurn: the same when the replica is killed
// (SIGKILL) mid-turn. Once its lease lapses, the replica that takes its
// runs over finds the turns they had not finished in the log, and has
// Claude go on with them.
func TestFaultCrashGoesOnWithCutTurn(t *testing.T) {
	e := newEnv(t, cutTurnScenario(), envOptions{quiet: true})
	a := e.startReplica("A")
	b := e.startReplica("B")
	s := e.cutTurn(a, syscall.SIGKILL)
	e.wantWentOn(b, s, "The Parley replica running this session stopped while Claude was working.")
	if got := e.owner(s); got != b.id {
		t.Errorf("owner %q, want B (%s)", got, b.id)
	}
}

// drainNotice is how the page says a drain cut a turn off.
const drainNotice = "Parley is restarting, and Claude"

// TestFaultCrashRestartGoesOnWithCutTurn: the same with no other replica:
// the replica started after the crash takes the session over once the
// dead one's lease lapses, and has Claude go on.
func TestFaultCrashRestartGoesOnWithCutTurn(t *testing.T) {
	e := newEnv(t, cutTurnScenario(), envOptions{quiet: true})
	a := e.startReplica("A")
	s := e.cutTurn(a, syscall.SIGKILL)
	a2 := e.startReplica("A2")
	e.wantWentOn(a2, s, "The Parley replica running this session stopped while Claude was working.")
}

// TestFaultPausedReplicaIsFenced: a replica paused (SIGSTOP, with its
// claude) longer than its lease while its turn streams is taken over: B
// has Claude go on with the cut turn. When A wakes up, it writes nothing
// to the session's log (its lease is not surely held), finds on its next
// heartbeat that the lease had lapsed, and ends the run B took over.
func TestFaultPausedReplicaIsFenced(t *testing.T) {
	e := newEnv(t, cutTurnScenario(), envOptions{quiet: true})
	a := e.startReplica("A")
	b := e.startReplica("B")
	s := e.newSession()
	wa := e.dialReplica(a, e.user, s.ID)
	wa.prompt("stream something long")
	wa.waitFor(90*time.Second, "streamed words")
	wa.prompt("and mind the tests")
	waitUntil(t, 30*time.Second, "the queued prompt in the log", func() bool { return e.promptCount(s.ID) == 2 })
	aPid := e.pidOf(s.ID)
	wake := a.pause(aPid)
	defer wake()
	e.wantWentOn(b, s.ID, "The Parley replica running this session stopped while Claude was working.")
	var bStarted int64
	e.queryRow(`SELECT max(seq) FROM events WHERE session_id = $1 AND type = 'run_started'`, []any{s.ID}, &bStarted)
	wake()
	// A's run ends: its process group is gone…
	waitUntil(t, 30*time.Second, "A's claude process to end", func() bool {
		return syscall.Kill(aPid, 0) == syscall.ESRCH
	})
	// …B's run is the session's only live one, and it goes on working.
	var open int
	e.queryRow(`SELECT count(*) FROM runs WHERE session_id = $1 AND ended_at IS NULL`, []any{s.ID}, &open)
	if open != 1 || e.owner(s.ID) != b.id {
		t.Errorf("%d open runs besides A's, owner %q; want B's one run (%s)", open, e.owner(s.ID), b.id)
	}
	wb := e.dialReplica(b, e.user, s.ID)
	wb.prompt("still there?")
	wb.waitFor(90*time.Second, fakeapi.ExhaustedText)
	e.wantContiguousLog(s.ID)
	// Nothing of A's reply reached the log once B ran the session.
	var late int
	e.queryRow(`SELECT count(*) FROM events WHERE session_id = $1 AND seq > $2 AND payload::text LIKE '%streamed words%'`,
		[]any{s.ID, bStarted}, &late)
	if late != 0 {
		t.Errorf("%d events of A's cut reply after B's run started, want none", late)
	}
}
