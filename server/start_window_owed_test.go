package server

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"parley/runner"
	"parley/runner/fakeapi"
	"parley/streamjson"
)

// TestOwedAnswerReachesAPrimedResumeAhead: an answer saved while claude
// was frozen, whose process Parley then stopped (the answer is owed, and
// nothing resumes the session for it), reaches the model exactly once when
// the session's next start is a resume ahead that primes (its page
// opened): the owed answer goes as the run's first turn, after the prime
// was rewound, and neither the model nor the log nor the page sees any of
// the prime.
func TestOwedAnswerReachesAPrimedResumeAhead(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{
		{Text: "Let me ask.", ToolName: askTool, ToolInput: colourQuestion(false)},
		{Text: "Thanks, carrying on."},
	}, envOptions{quiet: true})
	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt("pick a colour")
	in := e.waitInput(w, s.ID)
	e.waitTranscript(s, e.fake.Requests()[0].ToolUseID)
	if err := syscall.Kill(-e.pidOf(s.ID), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	w.answer(in, map[string]any{"choice": "Orange"})
	w.waitFor(60*time.Second, "You answered: Orange")
	w.conn.Close()
	e.endRun(s.ID) // Parley stops it: the answer is owed to the next run
	if owed, err := e.st.UndeliveredInputs(t.Context(), s.ID); err != nil || len(owed) != 1 {
		t.Fatalf("answers owed after the stop: %d, %v; want 1", len(owed), err)
	}
	before := len(e.fake.Requests())

	w2 := e.dial(s.ID, 0) // the page opens: resumed ahead and primed
	w2.waitFor(90*time.Second, newTurnText, "Thanks, carrying on.")
	e.waitTurnOver(s.ID)
	e.wantDelivered(s.ID, in.ID, runner.DeliveredNewTurn)
	sess, err := e.st.GetSession(t.Context(), s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if tr := e.transcriptOf(e.project.ID, sess.ClaudeSessionID); !strings.Contains(tr, streamjson.PrimeText) {
		t.Fatal("no prime in the CLI's transcript: the resume ahead was not primed")
	}
	reqs := e.fake.Requests()[before:]
	told := 0
	for _, r := range reqs {
		if strings.Contains(r.LastUserText(), "Orange") {
			told++
		}
	}
	if told != 1 {
		t.Fatalf("%d requests since the open carry the answer as their turn, want exactly 1", told)
	}
	if got := userMentions(reqs[len(reqs)-1], "Orange"); got != 1 {
		t.Errorf("the model was told the answer %d times, want once", got)
	}
	e.noPrimeSeen(s.ID)
	_, page := e.get("/sessions/" + s.ID)
	for _, p := range []string{streamjson.PrimeText, streamjson.PrimeMessagePrefix} {
		if strings.Contains(page, p) {
			t.Errorf("the session's page shows the prime (%q)", p)
		}
	}
	if n := count(e.eventTypes(s.ID), runner.TypeRunStarted); n != 2 {
		t.Errorf("%d runs, want 2 (the first, and the resume ahead that delivered)", n)
	}
}
