package server

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"parley/runner"
	"parley/runner/fakeapi"
	"parley/store"
	"parley/streamjson"
	"parley/warm"
)

// The prime turns of runner/prime.go, with the real CLI: a process started
// ahead has a turn of its own that the gateway answers and the runner
// rewinds away. The model must never see it, the session's log must never
// show it, and the conversation must be exactly the one without it, now
// and after a later --resume.

// transcriptOf is the CLI's own transcript of the session, read whole.
func (e *env) transcriptOf(projectID int64, claudeSessionID string) string {
	e.t.Helper()
	paths, _ := filepath.Glob(filepath.Join(ConfigDir(e.dataDir, projectID), "projects", "*", claudeSessionID+".jsonl"))
	if len(paths) != 1 {
		e.t.Fatalf("transcripts of %s: %v", claudeSessionID, paths)
	}
	b, err := os.ReadFile(paths[0])
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b)
}

// noPrimeSeen fails when a request the model got, or the session's log,
// holds anything of a prime.
func (e *env) noPrimeSeen(sessionID string) {
	e.t.Helper()
	for i, r := range e.fake.Requests() {
		if strings.Contains(string(r.Raw), streamjson.PrimeText) || strings.Contains(string(r.Raw), streamjson.PrimeMessagePrefix) {
			e.t.Fatalf("model request %d holds the prime turn:\n%.2000s", i, r.Raw)
		}
	}
	evs, err := e.st.EventsAfter(e.t.Context(), sessionID, 0, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, ev := range evs {
		if p := string(ev.Payload); strings.Contains(p, streamjson.PrimeText) || strings.Contains(p, streamjson.PrimeMessagePrefix) {
			e.t.Fatalf("the session's log shows the prime: %s %s", ev.Type, p)
		}
	}
}

// roles is a request's conversation as roles and texts, the CLI's own
// reminders and its environment message left out.
func roles(r fakeapi.Request) []string {
	var out []string
	for _, m := range r.Messages {
		if m.Role == "system" {
			continue
		}
		var texts []string
		for _, b := range m.Content {
			if b.Type == "text" && !strings.HasPrefix(b.Text, "<system-reminder>") && !strings.HasPrefix(b.Text, "# Environment") {
				texts = append(texts, b.Text)
			}
		}
		out = append(out, m.Role+":"+strings.Join(texts, "|"))
	}
	return out
}

// coldResumeSends ends the session's run and sends text, which starts its
// process again with --resume (no page open, nothing started ahead); it
// returns the conversation the model got with it (roles, one a line).
func (e *env) coldResumeSends(sess store.Session, text string) string {
	e.t.Helper()
	e.endRun(sess.ID)
	if err := e.srv.prompt(e.t.Context(), sess, text, runner.Author{Name: e.user.Name, ID: e.user.ID}); err != nil {
		e.t.Fatal(err)
	}
	e.waitModelSaw(text)
	return strings.Join(roles(e.fake.Requests()[len(e.fake.Requests())-1]), "\n")
}

// A new session's first message, in a warm process that was primed: the
// model gets that message alone, as the first of the conversation, and
// nothing before it; the prime is in the CLI's transcript only, on the
// branch the rewind left, and its answer came from the gateway.
func TestPrimeLeavesNoTraceOnANewSession(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "warm reply"}}, envOptions{quiet: true, perTurn: true, warm: testWarm()})
	e.get(fmt.Sprintf("/projects/%d", e.project.ID))
	pid := e.warmPid(e.project.ID)
	id := e.createSessionForm(e.project.ID, "first words")
	e.waitModelSaw("first words")
	if got := e.livePid(id); got != pid {
		t.Fatalf("the session runs in %d, not in the process started ahead (%d)", got, pid)
	}
	reqs := e.fake.Requests()
	if len(reqs) != 1 {
		t.Fatalf("the model got %d requests for one message, want 1", len(reqs))
	}
	if got := roles(reqs[0]); len(got) != 1 || got[0] != "user:first words" {
		t.Fatalf("the first request's conversation = %q, want the message alone", got)
	}
	sess, err := e.st.GetSession(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	tr := e.transcriptOf(e.project.ID, sess.ClaudeSessionID)
	if !strings.Contains(tr, streamjson.PrimeText) || !strings.Contains(tr, streamjson.PrimeMessagePrefix) {
		t.Fatalf("no prime in the CLI's transcript: the process was not primed\n%.3000s", tr)
	}
	w := e.dial(id, 0)
	w.waitFor(60*time.Second, "warm reply")
	e.waitTurnOver(id)
	w.prompt("and then")
	e.waitModelSaw("and then")
	last := e.fake.Requests()[len(e.fake.Requests())-1]
	if got := roles(last); strings.Join(got, "\n") != "user:first words\nassistant:warm reply\nuser:and then" {
		t.Fatalf("the follow-up's conversation = %q", got)
	}
	e.noPrimeSeen(id)
}

// A session resumed ahead (its page opened after the idle stop) and
// primed: the message's request holds the earlier conversation and the
// message, nothing more; and a later cold --resume, after a prime nobody
// used, loads the same conversation.
func TestPrimeLeavesNoTraceOnAResume(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "First reply."}, {Text: "Second reply."}, {Text: "Third reply."}}, envOptions{quiet: true})
	s := e.aheadSession()

	// Opened, resumed and primed ahead; nobody writes; the process ends.
	w := e.dial(s.ID, 0)
	if !e.waitLive(s.ID, true, 30*time.Second) {
		t.Fatal("opening the session did not resume it ahead")
	}
	w.conn.Close()
	e.endRun(s.ID)

	// Opened again, primed again, and this time a message comes.
	w = e.dial(s.ID, 0)
	if !e.waitLive(s.ID, true, 30*time.Second) {
		t.Fatal("opening the session again did not resume it ahead")
	}
	w.prompt("second")
	w.waitFor(60*time.Second, "Second reply.")
	last := e.fake.Requests()[len(e.fake.Requests())-1]
	want := "user:first\nassistant:First reply.\nuser:second"
	if got := strings.Join(roles(last), "\n"); got != want {
		t.Fatalf("the message after two primes sent the model:\n%s\nwant:\n%s", got, want)
	}
	e.waitTurnOver(s.ID)
	w.conn.Close()

	// A cold resume (the message itself starts the process; no page was open).
	fresh, err := e.st.GetSession(t.Context(), s.ID)
	if err != nil {
		t.Fatal(err)
	}
	want += "\nassistant:Second reply.\nuser:third"
	if got := e.coldResumeSends(fresh, "third"); got != want {
		t.Fatalf("a later --resume sent the model:\n%s\nwant:\n%s", got, want)
	}
	if n := strings.Count(e.transcriptOf(e.project.ID, fresh.ClaudeSessionID), streamjson.PrimeMessagePrefix); n < 2 {
		t.Fatalf("%d prime answers in the CLI's transcript, want the two primes'", n)
	}
	e.noPrimeSeen(s.ID)
}

// A process ahead that primed (so it wrote its conversation under its CLI
// session id) and then died, and is taken before the pool noticed (its
// tick is an hour here): the session starts cold, and under a CLI session
// id of its own, for the CLI refuses a --session-id that is in use
// ("Session ID … is already in use.").
func TestPrimedProcessDeadBeforeItsTakeStartsCold(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "cold reply"}}, envOptions{quiet: true, perTurn: true,
		warm: &warm.Config{PerProject: 1, Max: 2, Tick: time.Hour, Recheck: time.Hour, IdleAfter: time.Hour}})
	pid := e.readyWarmPid(e.project.ID)
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil || strings.Contains(string(b), ") Z ") {
			break // dead; nobody has reaped it, as the pool has not looked since
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d still runs after SIGKILL", pid)
		}
	}
	id := e.createSessionForm(e.project.ID, "after the death")
	e.waitModelSaw("after the death")
	if got := e.livePid(id); got == pid {
		t.Fatalf("the session runs in the dead process %d", pid)
	}
	e.noPrimeSeen(id)
}
