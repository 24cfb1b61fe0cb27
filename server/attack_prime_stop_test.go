package server

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"parley/runner"
	"parley/runner/fakeapi"
	"parley/store"
)

// Attacks on a prime cut short by Parley itself: Shutdown, an archive, a
// settings change (runner/prime.go, runner/supervisor_window.go).

// Parley stopped (Supervisor.Shutdown) while a resume ahead primes: the
// start went on after Shutdown returned, recorded a run of a replica that
// had stopped, and its process outlived Shutdown by the whole prime.
func TestAttackShutdownDuringPrime(t *testing.T) {
	bin, flag := slowClaude(t, 3*time.Second)
	e := newEnv(t, fakeapi.Scenario{{Text: "First reply."}}, envOptions{quiet: true, claudeBin: bin})
	s := e.aheadSession()
	fresh, err := e.st.GetSession(t.Context(), s.ID)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := e.st.EventsAfter(t.Context(), s.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	last := evs[len(evs)-1].Seq
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	w := e.dial(s.ID, 0) // the page opens: its process is resumed ahead and primed
	defer w.conn.Close()
	deadline := time.Now().Add(10 * time.Second)
	for len(pidsWith(fresh.ClaudeSessionID)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("opening the page started no process ahead")
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // the prime waits for the slow CLI
	e.sup.Shutdown()
	time.Sleep(200 * time.Millisecond)
	if pids := pidsWith(fresh.ClaudeSessionID); len(pids) > 0 {
		t.Errorf("processes %v of the session outlived Shutdown", pids)
	}
	time.Sleep(5 * time.Second) // the slow CLI would have started and primed by now
	after, err := e.st.EventsAfter(t.Context(), s.ID, last, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range after {
		if ev.Type == runner.TypeRunStarted {
			t.Errorf("a run was recorded after Shutdown: %s %s", ev.Type, ev.Payload)
		}
	}
	if pids := pidsWith(fresh.ClaudeSessionID); len(pids) > 0 {
		t.Errorf("processes %v of the session still run 5 s after Shutdown", pids)
	}
}

// A session archived while its resume ahead primes: archiving ends the
// session's process, and a start that was priming must not come alive
// after it.
func TestAttackArchiveDuringPrime(t *testing.T) {
	bin, flag := slowClaude(t, 3*time.Second)
	e := newEnv(t, fakeapi.Scenario{{Text: "First reply."}}, envOptions{quiet: true, claudeBin: bin})
	owner := e.member("owner@example.com", "Olga", roleOwner)
	s := e.aheadSession()
	sess, err := e.st.GetSession(t.Context(), s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	w := e.dial(s.ID, 0) // resumed ahead; the prime waits for the slow CLI
	deadline := time.Now().Add(10 * time.Second)
	for len(pidsWith(sess.ClaudeSessionID)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("opening the page started no process ahead")
		}
		time.Sleep(20 * time.Millisecond)
	}
	w.conn.Close()
	if resp := e.postAs(owner, "/sessions/"+s.ID+"/archive", url.Values{"archived": {"1"}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("archive: %d", resp.StatusCode)
	}
	time.Sleep(6 * time.Second) // the slow CLI would have started and primed by now
	if _, live := e.sup.Live(s.ID); live {
		t.Error("the archived session has a live process: its start primed on after the archive")
	}
	if pids := pidsWith(sess.ClaudeSessionID); len(pids) > 0 {
		t.Errorf("processes %v of the archived session run", pids)
	}
}

// A warm process killed by a settings change while it primes (the pool's
// recheck) leaves nothing: no process, nothing sent to the model; the
// pool starts another, which primes, and a new session takes it.
func TestAttackSettingsChangeDuringWarmPrime(t *testing.T) {
	bin, flag := slowClaude(t, 2*time.Second)
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, fakeapi.Scenario{{Text: "warm reply"}}, envOptions{quiet: true, perTurn: true, warm: testWarm(), claudeBin: bin})
	e.get(fmt.Sprintf("/projects/%d", e.project.ID))
	old := e.warmPid(e.project.ID)
	time.Sleep(300 * time.Millisecond) // its prime waits for the slow CLI
	if err := os.Remove(flag); err != nil {
		t.Fatal(err)
	}
	if err := e.st.SetProjectLimits(t.Context(), e.project.ID, store.ProjectLimits{SessionBudgetUSD: 4}); err != nil {
		t.Fatal(err)
	}
	e.warm.Recheck()
	pidGone(t, old, 10*time.Second)
	pid := e.warmPid(e.project.ID, old)
	for deadline := time.Now().Add(30 * time.Second); !slices.Contains(e.warm.ReadyPids(e.project.ID), pid); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the new process ahead never finished its prime")
		}
	}
	if n := len(e.fake.Requests()); n != 0 {
		t.Fatalf("the model got %d requests before any message", n)
	}
	id := e.createSessionForm(e.project.ID, "first words")
	e.waitModelSaw("first words")
	if got := e.livePid(id); got != pid {
		t.Fatalf("the session runs in %d, not in the new primed process %d", got, pid)
	}
	if got := strings.Join(roles(e.fake.Requests()[0]), "\n"); got != "user:first words" {
		t.Fatalf("the model got:\n%s", got)
	}
	e.noPrimeSeen(id)
}
