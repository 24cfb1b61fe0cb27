package server

import (
	"strings"
	"testing"
	"time"

	"parley/runner"
	"parley/runner/fakeapi"
)

// TestLostRunGoesOnBeforeTheNextMessage: a run lost with its replica (here
// fenced: it writes nothing more, so the log still shows it live, as after
// a crash) whose session gets the team's next message before any replica
// reconciled it. The run that starts for the message reconciles the log
// first and sends, before the message, the prompt that goes on with the
// cut turn and carries the message the lost CLI had queued: the model reads
// them in that order, the page says so, and nothing is left in line.
func TestLostRunGoesOnBeforeTheNextMessage(t *testing.T) {
	sc := cutTurnScenario()
	sc = append(sc, fakeapi.Step{Text: "Answered the next message."})
	e := newEnv(t, sc, envOptions{quiet: true})
	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt("stream something long")
	w.waitFor(90*time.Second, "streamed words")
	w.prompt("and mind the tests")
	waitUntil(t, 30*time.Second, "the queued prompt in the log", func() bool { return e.promptCount(s.ID) == 2 })
	r, ok := e.sup.Live(s.ID)
	if !ok {
		t.Fatal("no live run")
	}
	e.sup.Fence(s.ID, r.ID())
	<-r.Done()
	var open int
	e.queryRow(`SELECT count(*) FROM events WHERE session_id = $1 AND type = 'run_ended'`, []any{s.ID}, &open)
	if open != 0 {
		t.Fatalf("the fenced run logged its end: it was not lost")
	}

	w.prompt("what next?")
	w.waitFor(90*time.Second, runner.CrashNotice)
	w.waitFor(90*time.Second, "Answered the next message.")
	var texts []string
	for _, r := range e.fake.Requests()[1:] {
		texts = append(texts, r.LastUserText())
	}
	t.Logf("after the lost run the model read %q", texts)
	all := strings.Join(texts, "\n---\n")
	goOn := strings.Index(all, "Go on where you left off.")
	carried := strings.Index(all, "From "+e.user.Name+":\nand mind the tests")
	next := strings.Index(all, "what next?")
	if goOn < 0 || carried < goOn || next < carried {
		t.Errorf("after the lost run the model read %q; want the prompt that goes on, with the queued message, then the next message", texts)
	}
	if n := strings.Count(all, "Go on where you left off."); n != 1 {
		t.Errorf("the model was asked %d times to go on, want once", n)
	}
	if prompts := e.promptCount(s.ID); prompts != 4 {
		t.Errorf("the log holds %d prompts, want 4: two sent, the one that goes on, the next message", prompts)
	}
	e.waitLineEmpty(s.ID, "the prompt that went on and the next message")
	e.wantContiguousLog(s.ID)
}
