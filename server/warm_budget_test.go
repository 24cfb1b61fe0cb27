package server

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"parley/runner/fakeapi"
	"parley/store"
	"parley/warm"
)

// Issue 33, item 1, for projects with a spending limit: a process started
// ahead gets the --max-budget-usd a new session's cold start would get,
// and is used only while that is still what a cold start gets.

// TestWarmWithSessionBudget: a project with a per-session budget gets a
// process ahead, started with that budget (a new session has spent
// nothing), and a new session's first message reaches the model from it.
func TestWarmWithSessionBudget(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "budgeted reply"}}, envOptions{quiet: true, perTurn: true, warm: testWarm()})
	if err := e.st.SetProjectLimits(t.Context(), e.project.ID, store.ProjectLimits{SessionBudgetUSD: 2.5}); err != nil {
		t.Fatal(err)
	}
	e.get(fmt.Sprintf("/projects/%d", e.project.ID))
	pid := e.warmPid(e.project.ID)
	if got := budgetArg(t, pid); got != "2.500000" {
		t.Fatalf("the process ahead has --max-budget-usd %q, want 2.500000", got)
	}
	id := e.createSessionForm(e.project.ID, "first budgeted words")
	e.waitModelSaw("first budgeted words")
	if got := e.livePid(id); got != pid {
		t.Fatalf("the session's run is pid %d, want the process started ahead, %d", got, pid)
	}
}

// TestWarmDailyBudgetSpentBeforeTake: with a daily budget, another session
// spends between the warm-up and the take. The process ahead has the old
// --max-budget-usd: it is not used, it is killed, and the new session
// starts cold with what is left of the day now.
func TestWarmDailyBudgetSpentBeforeTake(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "costly", InputTokens: 1_000_000}}, envOptions{quiet: true, perTurn: true, warm: testWarm()})
	if err := e.st.SetProjectLimits(t.Context(), e.project.ID, store.ProjectLimits{DailyBudgetUSD: 10}); err != nil {
		t.Fatal(err)
	}
	e.get(fmt.Sprintf("/projects/%d", e.project.ID))
	pid := e.warmPid(e.project.ID)
	if got := budgetArg(t, pid); got != "10.000000" {
		t.Fatalf("the process ahead has --max-budget-usd %q, want 10.000000", got)
	}
	other := e.newSession() // not through the form: it takes no process
	w := e.dial(other.ID, 0)
	w.prompt("spend some of the day")
	w.waitFor(60*time.Second, "turn-result")
	today := spentToday(t, e)
	want := strconv.FormatFloat(10-today, 'f', 6, 64)

	id := e.createSessionForm(e.project.ID, "after the spending")
	e.waitModelSaw("after the spending")
	got := e.livePid(id)
	if got == pid {
		t.Fatalf("the session runs in the process started with the day's old budget (%d)", pid)
	}
	if b := budgetArg(t, got); b != want {
		t.Errorf("the cold start has --max-budget-usd %q, want %s (the day spent $%.6f of $10)", b, want, today)
	}
	pidGone(t, pid, 10*time.Second)
}

// TestWarmSessionStopsAtItsBudget: a session that took a process ahead
// stops at its budget exactly as a cold one does: the turn that spends
// past it ends with the limit's notice, no further model request, the
// session interrupted.
func TestWarmSessionStopsAtItsBudget(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{
		{Text: "Expensive thinking.", ToolName: "Bash", ToolInput: map[string]any{"command": "echo hi"}, InputTokens: 1_000_000},
		{Text: "never reached"},
	}, envOptions{quiet: true, perTurn: true, warm: testWarm()})
	if err := e.st.SetProjectLimits(t.Context(), e.project.ID, store.ProjectLimits{SessionBudgetUSD: 1}); err != nil {
		t.Fatal(err)
	}
	// No process ahead yet: the first session starts cold (its take has
	// the pool start one for the next).
	start := time.Now()
	cold := e.createSessionForm(e.project.ID, "cold thinks hard")
	e.waitModelSaw("cold thinks hard")
	coldTook := time.Since(start)
	coldOut := budgetOutcome(t, e, cold)
	pid := e.warmPid(e.project.ID)
	for deadline := time.Now().Add(30 * time.Second); len(e.warm.ReadyPids(e.project.ID)) == 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	start = time.Now()
	warm := e.createSessionForm(e.project.ID, "warm thinks hard")
	e.waitModelSaw("warm thinks hard")
	t.Logf("form post to model request under a $1 session budget (20 ms polls): cold %s, warm %s", coldTook.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	if got := e.livePid(warm); got != pid {
		t.Fatalf("the session's run is pid %d, want the process started ahead, %d", got, pid)
	}
	if warmOut := budgetOutcome(t, e, warm); warmOut != coldOut {
		t.Errorf("a warm session stopped as %q, a cold one as %q", warmOut, coldOut)
	}
	if !strings.Contains(coldOut, "This session has spent $4.00, its limit is $1.00.") || !strings.Contains(coldOut, "interrupted") {
		t.Errorf("the cold session did not stop at its limit: %s", coldOut)
	}
}

// budgetOutcome waits for the session's turn to end at its limit and
// returns what a member sees of it: the status, the limit's notice, and
// how many model requests the session made.
func budgetOutcome(t *testing.T, e *env, sessionID string) string {
	t.Helper()
	w := e.dial(sessionID, 0)
	page := w.waitFor(60*time.Second, "Claude stopped: the spending limit was reached.")
	notice := limitNotice.FindString(page)
	var status string
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		s, err := e.st.GetSession(t.Context(), sessionID)
		if err != nil {
			t.Fatal(err)
		}
		if status = s.Status; status == "interrupted" {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // a request past the limit would be made by now
	s, _ := e.st.GetSession(t.Context(), sessionID)
	n := 0
	for _, r := range e.fake.Requests() {
		if r.SessionID == s.ClaudeSessionID {
			n++
		}
	}
	if strings.Contains(page, "never reached") {
		n += 100
	}
	return fmt.Sprintf("status %s, %q, %d model requests", status, notice, n)
}

// limitNotice is the sentence that says a session reached its own limit.
var limitNotice = regexp.MustCompile(`This session has spent \$[0-9.]+, its limit is \$[0-9.]+\.`)

// budgetArg is the --max-budget-usd in the argv of the claude process pid
// (or of its child, under a guard); "" without one.
func budgetArg(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Split(string(b), "\x00")
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "--max-budget-usd" {
			return args[i+1]
		}
	}
	return ""
}

// spentToday waits until the project's day shows spending that no
// longer moves, and returns it.
func spentToday(t *testing.T, e *env) float64 {
	t.Helper()
	last, since := 0.0, time.Now()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		usd, err := e.st.ProjectSpentToday(t.Context(), e.project.ID)
		if err != nil {
			t.Fatal(err)
		}
		if usd != last {
			last, since = usd, time.Now()
		}
		if last > 0 && time.Since(since) > 500*time.Millisecond {
			return last
		}
	}
	t.Fatalf("the project's day shows no settled spending (last $%.6f)", last)
	return 0
}

// TestWarmPrimedButStaleStartsCold: a process ahead that finished its
// prime (it wrote its conversation under the session id it was given) is
// stale at its take: the cold start in its place runs under a new CLI
// session id, which the session row records, and the message reaches the
// model. Before, the CLI refused the id: "Session ID … is already in use."
func TestWarmPrimedButStaleStartsCold(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "reply"}}, envOptions{quiet: true, perTurn: true, warm: testWarm()})
	e.get(fmt.Sprintf("/projects/%d", e.project.ID))
	pid := e.warmPid(e.project.ID)
	for deadline := time.Now().Add(30 * time.Second); len(e.warm.ReadyPids(e.project.ID)) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the process ahead never finished its prime")
		}
	}
	settings := e.project.ProjectSettings
	settings.AppendSystemPrompt = "PRIMED-THEN-STALE"
	if err := e.st.UpdateProjectSettings(t.Context(), e.project.ID, settings, ""); err != nil {
		t.Fatal(err)
	}
	id := e.createSessionForm(e.project.ID, "after the prime")
	if system, _ := e.waitModelSaw("after the prime"); !strings.Contains(system, "PRIMED-THEN-STALE") {
		t.Fatalf("the model saw the old system prompt:\n%s", system)
	}
	if got := e.livePid(id); got == pid {
		t.Fatalf("the session runs in the stale process %d", pid)
	}
	sess, err := e.st.GetSession(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if reqs := e.fake.Requests(); reqs[len(reqs)-1].SessionID != sess.ClaudeSessionID {
		t.Errorf("the model saw CLI session %q, the session row has %q", reqs[len(reqs)-1].SessionID, sess.ClaudeSessionID)
	}
}

// TestWarmDailySpendReplacesTheProcess: under a daily limit, spending by
// another session makes the process ahead stale; the pool's recheck ends
// it, waits Config.SpendRefill (a busy project would restart one at each
// recheck), then starts one with what is left of the day now. Once the
// day's limit is reached, it ends that one too and starts none.
func TestWarmDailySpendReplacesTheProcess(t *testing.T) {
	const refill = 2 * time.Second
	e := newEnv(t, fakeapi.Scenario{{Text: "reply"}}, envOptions{quiet: true, perTurn: true,
		warm: &warm.Config{PerProject: 1, Max: 2, Tick: 50 * time.Millisecond, Recheck: 100 * time.Millisecond, IdleAfter: time.Hour, SpendRefill: refill}})
	ctx := t.Context()
	if err := e.st.SetProjectLimits(ctx, e.project.ID, store.ProjectLimits{SessionBudgetUSD: 5, DailyBudgetUSD: 10}); err != nil {
		t.Fatal(err)
	}
	e.get(fmt.Sprintf("/projects/%d", e.project.ID))
	pid := e.warmPid(e.project.ID)
	if got := budgetArg(t, pid); got != "5.000000" {
		t.Fatalf("the process ahead has --max-budget-usd %q, want the session's 5.000000", got)
	}
	// Another session's model requests, as the gateway charges them.
	other := e.newSession()
	if err := e.st.ChargeModelUsage(ctx, e.project.ID, other.ID, 6.5); err != nil {
		t.Fatal(err)
	}
	charged := time.Now()
	pidGone(t, pid, 5*time.Second)
	next := e.warmPid(e.project.ID, pid)
	if waited := time.Since(charged); waited < refill {
		t.Errorf("the next process started %s after the spending, want at least %s", waited, refill)
	}
	if got := budgetArg(t, next); got != "3.500000" {
		t.Errorf("the next process has --max-budget-usd %q, want what is left of the day, 3.500000", got)
	}
	if err := e.st.ChargeModelUsage(ctx, e.project.ID, other.ID, 4); err != nil {
		t.Fatal(err)
	}
	pidGone(t, next, 5*time.Second)
	time.Sleep(time.Second)
	if pids := e.warm.Pids(e.project.ID); len(pids) != 0 {
		t.Errorf("processes ahead over the daily limit: %v", pids)
	}
}
