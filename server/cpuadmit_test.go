package server

import (
	"strings"
	"testing"
	"time"

	"parley/runner/fakeapi"
)

// TestCPUBudgetQueuesTheThirdStreamingSession: with a CPU budget of 2
// (PARLEY_CPU_RUNS), two sessions streaming and a third prompted: the
// third waits in line with its place on its page (and on a reload of it),
// its process not even started, and is sent once one of the two ends its
// turn. Answers and live processes are not what the budget counts:
// sessions working are.
func TestCPUBudgetQueuesTheThirdStreamingSession(t *testing.T) {
	holdA, holdB := make(chan struct{}), make(chan struct{})
	e := newEnv(t, fakeapi.Scenario{
		{Text: "A is streaming", Hold: holdA},
		{Text: "B is streaming", Hold: holdB},
		{Text: "C answered"},
	}, envOptions{quiet: true, cpuRuns: 2})
	defer close(holdB)
	a, b, c := e.newSession(), e.newSession(), e.newSession()
	wa, wb, wc := e.dial(a.ID, 0), e.dial(b.ID, 0), e.dial(c.ID, 0)
	wa.prompt("task A")
	wa.waitFor(60*time.Second, "A is streaming")
	wb.prompt("task B")
	wb.waitFor(60*time.Second, "B is streaming")

	wc.prompt("task C")
	wc.waitFor(10*time.Second, "Waiting for a free slot, 1st in line")
	if page := e.getAs(e.user, "/sessions/"+c.ID); !strings.Contains(page, "1st in line") {
		t.Errorf("C's page, loaded again, does not show its place in line")
	}
	if _, live := e.sup.Live(c.ID); live {
		t.Errorf("C has a live process while it waits for the CPU budget")
	}
	if all, _ := e.lineItems(c.ID); all != 1 {
		t.Errorf("C's waiting prompt is kept in line %d times, want once (a crash must not lose it)", all)
	}

	close(holdA) // A's turn ends: its share of the budget goes to C
	wc.waitFor(90*time.Second, "C answered")
	aEnd, cPrompt := firstEvent(t, e, a.ID, "result"), firstEvent(t, e, c.ID, "prompt")
	if cPrompt.Before(aEnd) {
		t.Errorf("C's prompt was sent at %v, before A's turn ended at %v", cPrompt, aEnd)
	}
	if all, _ := e.lineItems(c.ID); all != 0 {
		t.Errorf("C still has %d items kept in line once answered", all)
	}
}

// firstEvent is when the session's first event of type typ was logged.
func firstEvent(t *testing.T, e *env, sessionID, typ string) time.Time {
	t.Helper()
	evs, err := e.st.EventsAfter(t.Context(), sessionID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Type == typ {
			return ev.CreatedAt
		}
	}
	t.Fatalf("session %s has no %s event", sessionID, typ)
	return time.Time{}
}
