package server

import (
	"testing"
	"time"

	"parley/runner/fakeapi"
	"parley/store"
)

// endRun stops the session's process, as the idle timer does, and waits
// until it has gone.
func (e *env) endRun(sessionID string) {
	e.t.Helper()
	e.sup.Stop(sessionID)
	e.waitLive(sessionID, false, 30*time.Second)
}

// waitLive waits until the session's process is (or is not) live here.
func (e *env) waitLive(sessionID string, want bool, timeout time.Duration) bool {
	e.t.Helper()
	for deadline := time.Now().Add(timeout); ; time.Sleep(20 * time.Millisecond) {
		if _, live := e.sup.Live(sessionID); live == want {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// aheadSession is a session that has had one turn and whose process has
// ended since, as after the idle stop.
func (e *env) aheadSession() store.Session {
	e.t.Helper()
	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt("first")
	w.waitFor(60*time.Second, "First reply.")
	e.waitTurnOver(s.ID)
	w.conn.Close()
	e.endRun(s.ID)
	return s
}

// A member who opens a session whose process has ended starts it then:
// the message finds the same process live, so its turn costs what a
// follow-up costs. Before server/ahead.go the page's hello started nothing
// and the message paid the CLI's whole start.
func TestOpeningASessionResumesItAhead(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "First reply."}, {Text: "Second reply."}}, envOptions{quiet: true})
	s := e.aheadSession()
	started := count(e.eventTypes(s.ID), "run_started")

	w := e.dial(s.ID, 0)
	if !e.waitLive(s.ID, true, 30*time.Second) {
		t.Fatal("opening the session did not start its process ahead of the message")
	}
	pid := e.pidOf(s.ID)
	w.prompt("second")
	w.waitFor(60*time.Second, "Second reply.")
	if got := e.pidOf(s.ID); got != pid {
		t.Errorf("the message ran in process %d, not the one started ahead (%d)", got, pid)
	}
	if n := count(e.eventTypes(s.ID), "run_started"); n != started+1 {
		t.Errorf("%d runs started after the open, want 1", n-started)
	}
	if last := e.fake.Requests()[len(e.fake.Requests())-1].LastUserText(); last == "" {
		t.Error("the resumed process sent the model no message")
	}
	// The process started ahead was readied (initialize) and the CLI's
	// answer, Parley's bookkeeping, is not in the session's log.
	if n := count(e.eventTypes(s.ID), "control_response"); n != 0 {
		t.Errorf("%d control_response events in the log, want none", n)
	}
}

// Typing in the composer of a page that stayed open while the process
// ended starts it again.
func TestTypingResumesAhead(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "First reply."}}, envOptions{quiet: true})
	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt("first")
	w.waitFor(60*time.Second, "First reply.")
	e.waitTurnOver(s.ID)
	e.endRun(s.ID)
	time.Sleep(aheadEvery) // the hello's period is over; typing may ask again
	w.send(map[string]any{"action": "typing"})
	if !e.waitLive(s.ID, true, 30*time.Second) {
		t.Fatal("typing did not start the session's process")
	}
}

// A viewer (who may not write) opening or typing starts nothing, nor does
// anyone on an archived session; a process started ahead that nobody uses
// ends with the idle timer, not later.
func TestResumeAheadOnlyForWriters(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "First reply."}}, envOptions{quiet: true})
	s := e.aheadSession()
	viewer := e.member("watcher@example.com", "watcher", roleViewer)
	w := e.dialAs(viewer, s.ID, 0)
	w.send(map[string]any{"action": "typing"})
	if e.waitLive(s.ID, true, 3*time.Second) {
		t.Fatal("a viewer's page started the session's process")
	}
	if err := e.st.ArchiveSession(t.Context(), s.ID, true); err != nil {
		t.Fatal(err)
	}
	e.dial(s.ID, 0)
	if e.waitLive(s.ID, true, 3*time.Second) {
		t.Fatal("an archived session's process started ahead")
	}
}

// Attack: a member removed from the project keeps a page open and types
// in it to make Parley start the session's process. The right to write is
// read afresh at each request, not taken from when the page opened, so
// nothing starts.
func TestRemovedMemberStartsNothingAhead(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "First reply."}}, envOptions{quiet: true})
	s := e.aheadSession()
	gone := e.member("gone@example.com", "gone", roleMember)
	w := e.dialAs(gone, s.ID, 0)
	if !e.waitLive(s.ID, true, 30*time.Second) {
		t.Fatal("the member's page did not start the process ahead")
	}
	e.endRun(s.ID)
	if err := e.st.RemoveMember(t.Context(), e.project.ID, gone.ID); err != nil {
		t.Fatal(err)
	}
	time.Sleep(aheadEvery)
	w.send(map[string]any{"action": "typing"})
	if e.waitLive(s.ID, true, 3*time.Second) {
		t.Fatal("a removed member's open page started the session's process")
	}
}
