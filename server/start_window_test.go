package server

import (
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"parley/runner"
	"parley/runner/fakeapi"
	"parley/store"
)

// The window of a start (runner/supervisor_window.go): a stop that lands
// at any moment between the start's process and its run going live ends
// the start: its process killed and reaped, nothing live, no run left
// open in the log. Each test holds the start at one StartPoint (the
// supervisor's start hook) and stops it there, with the real CLI.

// startHold holds one start at one StartPoint and runs act there.
type startHold struct {
	mu      sync.Mutex
	session string
	point   runner.StartPoint
	act     func()
	noted   chan struct{} // closed at StartStopNoted of session
}

// hookStarts installs h as e's start hook.
func (e *env) hookStarts() *startHold {
	h := &startHold{}
	e.sup.SetStartHook(func(sessionID string, at runner.StartPoint) {
		h.mu.Lock()
		if h.session == "*" && at == h.point { // the first start to get there
			h.session = sessionID
		}
		session, point, act, noted := h.session, h.point, h.act, h.noted
		if sessionID == session && at == runner.StartStopNoted && noted != nil {
			h.noted = nil
		}
		h.mu.Unlock()
		switch {
		case sessionID != session:
		case at == runner.StartStopNoted && noted != nil:
			close(noted)
		case at == point && act != nil:
			act()
		}
	})
	return h
}

// hold has the session's start, when it reaches point, run act; session
// "*" is the first start to reach it (sessionOf says which).
func (h *startHold) hold(sessionID string, point runner.StartPoint, act func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.session, h.point, h.act, h.noted = sessionID, point, act, make(chan struct{})
}

// sessionOf is the session h holds.
func (h *startHold) sessionOf() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.session
}

// stopThere has the session's start stopped (Supervisor.Stop, as an
// archive or the idle stop's caller does) when it reaches point; stopped
// closes when Stop returned. The start goes on once the stop marked it,
// or once Stop returned (before the fix, Stop did not see the start).
func (e *env) stopThere(h *startHold, sessionID string, point runner.StartPoint) (stopped chan struct{}) {
	stopped = make(chan struct{})
	h.hold(sessionID, point, func() {
		h.mu.Lock()
		noted := h.noted
		h.mu.Unlock()
		go func() { e.sup.Stop(h.sessionOf()); close(stopped) }()
		select {
		case <-noted:
		case <-stopped:
		}
	})
	return stopped
}

// startEnded fails unless the session has nothing live, no process of its
// CLI conversation and no run open in the log.
func (e *env) startEnded(sess store.Session, point runner.StartPoint) {
	e.t.Helper()
	if _, live := e.sup.Live(sess.ID); live {
		e.t.Fatalf("stopped when %s: the start went live", point)
	}
	if pids := pidsWith(sess.ClaudeSessionID); len(pids) > 0 {
		e.t.Fatalf("stopped when %s: processes %v of the start run", point, pids)
	}
	if open, err := e.st.HasOpenRun(e.t.Context(), sess.ID); err != nil || open {
		e.t.Fatalf("stopped when %s: a run of the session is left open in the log (%v)", point, err)
	}
	started, ended := count(e.eventTypes(sess.ID), runner.TypeRunStarted), count(e.eventTypes(sess.ID), runner.TypeRunEnded)
	if started != ended {
		e.t.Fatalf("stopped when %s: the log shows %d runs started and %d ended", point, started, ended)
	}
}

var windowPoints = []runner.StartPoint{runner.StartSpawned, runner.StartReady, runner.StartRecorded}

// TestStopInAResumeAheadsWindow: a resume ahead (primed) stopped after its
// process started, after its prime, and after it was recorded open.
// Before the fix a stop after the prime went unseen: the run went live.
func TestStopInAResumeAheadsWindow(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "First reply."}}, envOptions{quiet: true, perTurn: true})
	h := e.hookStarts()
	for _, point := range windowPoints {
		func() {
			s := e.aheadSession()
			sess, err := e.st.GetSession(t.Context(), s.ID)
			if err != nil {
				t.Fatal(err)
			}
			stopped := e.stopThere(h, s.ID, point)
			err = e.sup.ResumeAhead(t.Context(), s.ID, e.srv.starter(sess))
			<-stopped
			t.Logf("stopped when %s: the start ended with %v", point, err)
			e.startEnded(sess, point)
			e.noPrimeSeen(s.ID)
		}()
	}
}

// TestStopInAColdStartsWindow: a message's cold start (--resume, not
// primed) stopped after its process started, when ready, and after it was
// recorded open: the message fails, the model never sees it.
func TestStopInAColdStartsWindow(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "First reply."}}, envOptions{quiet: true, perTurn: true})
	h := e.hookStarts()
	for _, point := range windowPoints {
		func() {
			s := e.aheadSession()
			sess, err := e.st.GetSession(t.Context(), s.ID)
			if err != nil {
				t.Fatal(err)
			}
			stopped := e.stopThere(h, s.ID, point)
			text := "never sent " + string(point)
			err = e.sup.Prompt(t.Context(), s.ID, e.srv.starter(sess), text, runner.Author{Name: e.user.Name, ID: e.user.ID})
			<-stopped
			t.Logf("stopped when %s: the message's start ended with %v", point, err)
			e.startEnded(sess, point)
			time.Sleep(300 * time.Millisecond) // a turn sent would have reached the model by now
			for _, r := range e.fake.Requests() {
				if strings.Contains(string(r.Raw), text) {
					t.Fatalf("stopped when %s: the model got the message", point)
				}
			}
		}()
	}
}

// TestStopInAWarmStartsWindow: a new session's first message takes a warm
// process (primed ahead), and a stop lands once the take is ready and once
// the run is recorded: the warm process is reaped, nothing is live, no run
// is left open, and the model never gets the message.
func TestStopInAWarmStartsWindow(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "warm reply"}}, envOptions{quiet: true, perTurn: true, warm: testWarm()})
	h := e.hookStarts()
	prev := 0
	for _, point := range []runner.StartPoint{runner.StartReady, runner.StartRecorded} {
		pid := e.readyWarmPid(e.project.ID)
		for ; pid == prev; pid = e.readyWarmPid(e.project.ID) {
			time.Sleep(20 * time.Millisecond) // the pool has not dropped the one stopped yet
		}
		prev = pid
		stopped := e.stopThere(h, "*", point)
		text := "first words " + string(point)
		res := e.postAs(e.user, fmt.Sprintf("/projects/%d/sessions", e.project.ID), url.Values{"text": {text}})
		res.Body.Close()
		<-stopped
		id := h.sessionOf()
		sess, err := e.st.GetSession(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		pidGone(t, pid, time.Second)
		e.startEnded(sess, point)
		for _, r := range e.fake.Requests() {
			if strings.Contains(string(r.Raw), text) {
				t.Fatalf("stopped when %s: the model got the message", point)
			}
		}
		e.noPrimeSeen(id)
	}
}
