package runner

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"syscall"
	"testing"
	"time"

	"parley/runner/fakeapi"
)

// lastStatus is the last status the run reported for its session.
func (j *memJournal) lastStatus() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	for i := len(j.changes) - 1; i >= 0; i-- {
		if j.changes[i].Status != "" {
			return j.changes[i].Status
		}
	}
	return ""
}

// costs sums the cost the run reported.
func (j *memJournal) costs() float64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	var c float64
	for _, ch := range j.changes {
		c += ch.CostUSD
	}
	return c
}

// waitNotice waits for a notice whose text holds want.
func waitNotice(t *testing.T, pub chanPublisher, want string) {
	t.Helper()
	for {
		e := waitType(t, pub, TypeNotice)
		if strings.Contains(string(e.Payload), want) {
			return
		}
	}
}

func TestWatchdogInterruptsAStalledTurn(t *testing.T) {
	never := make(chan struct{})
	fake := fakeapi.Serve(t, fakeapi.Scenario{{Text: "Let me think", Hold: never}, {Text: "after the stall"}})
	sup, j, pub := newTestSupervisor(t, fakeapi.ClaudeBin(t), fake.Env(t.TempDir()))
	o := testOptions(t, "")
	o.StallTimeout = 3 * time.Second
	if err := sup.Prompt(t.Context(), "s1", With(o), "go", Author{Name: "you"}); err != nil {
		t.Fatal(err)
	}
	waitNotice(t, pub, "Claude printed nothing for 3 seconds, so Parley interrupted the turn")
	res := waitType(t, pub, "result")
	if got := TurnOutcome(res.Payload); got != StatusInterrupted {
		t.Errorf("stalled turn's outcome = %s (%s); want interrupted", got, res.Payload)
	}
	if got := j.lastStatus(); got != StatusInterrupted {
		t.Errorf("session status = %q; want interrupted", got)
	}
	if _, ok := sup.Live("s1"); !ok {
		t.Fatal("the interrupt ended the process; it should survive and take the next turn")
	}
	if err := sup.Prompt(t.Context(), "s1", With(o), "again", Author{Name: "you"}); err != nil {
		t.Fatal(err)
	}
	res = waitType(t, pub, "result")
	if !strings.Contains(string(res.Payload), "after the stall") || j.lastStatus() != StatusCompleted {
		t.Errorf("next turn: result %s, status %q; want the second step, completed", res.Payload, j.lastStatus())
	}
}

// A process that ignores the interrupt (here: stopped with SIGSTOP, so it
// cannot read it) is killed after the grace, and the session resumes.
func TestWatchdogKillsAProcessTheInterruptDoesNotStop(t *testing.T) {
	never := make(chan struct{})
	fake := fakeapi.Serve(t, fakeapi.Scenario{{Text: "Working", Hold: never}, {Text: "resumed fine"}})
	sup, j, pub := newTestSupervisor(t, fakeapi.ClaudeBin(t), fake.Env(t.TempDir()))
	o := testOptions(t, "")
	o.StallTimeout, o.StallGrace = time.Second, time.Second
	if err := sup.Prompt(t.Context(), "s1", With(o), "go", Author{Name: "you"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := fake.WaitRequests(ctx, 1); err != nil {
		t.Fatal(err)
	}
	r, _ := sup.Live("s1")
	if err := syscall.Kill(r.proc.cmd.Process.Pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitNotice(t, pub, "did not end the turn within 1 second")
	ended := waitType(t, pub, TypeRunEnded)
	if !strings.Contains(string(ended.Payload), `"status":"interrupted"`) || j.lastStatus() != StatusInterrupted {
		t.Errorf("run_ended = %s, status %q; want interrupted", ended.Payload, j.lastStatus())
	}
	o.Resume, o.StallTimeout = true, 0
	if err := sup.Prompt(t.Context(), "s1", With(o), "carry on", Author{Name: "you"}); err != nil {
		t.Fatal(err)
	}
	// The kill may come before the CLI saved the conversation; then Parley
	// starts a fresh one and sends the turn again. Either way it is answered.
	for {
		res := waitType(t, pub, "result")
		if strings.Contains(string(res.Payload), "resumed fine") {
			break
		}
		if !strings.Contains(string(res.Payload), "No conversation found") {
			t.Fatalf("after the kill: result %s; want the next step", res.Payload)
		}
	}
}

// The watchdog never fires while an ask is open: a person is thinking.
func TestWatchdogWaitsForAnOpenAsk(t *testing.T) {
	fake := fakeapi.Serve(t, fakeapi.Scenario{{ToolName: "Bash", ToolInput: map[string]any{"command": "touch x"}}, {Text: "done"}})
	sup, j, pub := newTestSupervisor(t, fakeapi.ClaudeBin(t), fake.Env(t.TempDir()))
	o := testOptions(t, "")
	o.StallTimeout = 1500 * time.Millisecond
	if err := sup.Prompt(t.Context(), "s1", With(o), "go", Author{Name: "you"}); err != nil {
		t.Fatal(err)
	}
	req := waitType(t, pub, TypeInputRequested)
	// Four times the stall timeout with the ask open; then answer it.
	select {
	case <-time.After(4 * o.StallTimeout):
	case <-t.Context().Done():
	}
	for _, typ := range j.types() {
		if typ == TypeNotice || typ == "result" {
			t.Fatalf("events = %v: the watchdog acted while the ask was open", j.types())
		}
	}
	var p AskPayload
	_ = json.Unmarshal(req.Payload, &p)
	if err := sup.Answer(t.Context(), "s1", With(o), p.InputID, Response{By: "you", Decline: true, Reason: "no"}); err != nil {
		t.Fatal(err)
	}
	waitType(t, pub, "result")
}

// Measured: the pinned CLI honours --max-budget-usd. It ends the turn
// before the next model request once the process spent more than that.
func TestBudgetEndsTheTurnWithANotice(t *testing.T) {
	fake := fakeapi.Serve(t, fakeapi.Scenario{
		{Text: "Costly", ToolName: "Bash", ToolInput: map[string]any{"command": "echo hi"}, InputTokens: 1_000_000},
		{Text: "never reached"},
	})
	sup, j, pub := newTestSupervisor(t, fakeapi.ClaudeBin(t), fake.Env(t.TempDir()))
	o := testOptions(t, "")
	o.ExtraArgs = []string{"--max-budget-usd", "1"}
	o.BudgetCheck = func(context.Context) string { return "The session reached its limit of $1.00." }
	if err := sup.Prompt(t.Context(), "s1", With(o), "go", Author{Name: "you"}); err != nil {
		t.Fatal(err)
	}
	res := waitType(t, pub, "result")
	if !strings.Contains(string(res.Payload), budgetSubtype) || TurnOutcome(res.Payload) != StatusInterrupted {
		t.Errorf("result = %.300s; want %s, interrupted", res.Payload, budgetSubtype)
	}
	waitNotice(t, pub, "The session reached its limit of $1.00.")
	ended := waitType(t, pub, TypeRunEnded)
	if !strings.Contains(string(ended.Payload), `"status":"interrupted"`) {
		t.Errorf("run_ended = %s; want the process ended, interrupted", ended.Payload)
	}
	if n := len(fake.Requests()); n != 1 {
		t.Errorf("the CLI made %d model requests; want 1 (it stops at the budget)", n)
	}
	var res1 resultFields
	_ = json.Unmarshal(res.Payload, &res1)
	if got := j.costs(); got <= 1 || math.Abs(got-res1.TotalCostUSD) > 1e-9 {
		t.Errorf("recorded cost %v; want the turn's %v (over the $1 budget)", got, res1.TotalCostUSD)
	}
}

func TestTurnCostOfAResumedProcess(t *testing.T) {
	// A resumed process's total includes the conversation's earlier cost;
	// the turn's own is in model_usage_since_last_result.
	raw := `{"type":"result","subtype":"success","total_cost_usd":16.0004,
		"model_usage_since_last_result":{"m":{"costUSD":12.0003},"n":{"costUSD":0.5}}}`
	var res resultFields
	if err := json.Unmarshal([]byte(raw), &res); err != nil {
		t.Fatal(err)
	}
	if got := res.turnCost(0); math.Abs(got-12.5003) > 1e-9 {
		t.Errorf("turn cost = %v; want 12.5003", got)
	}
	if got := (resultFields{TotalCostUSD: 3}).turnCost(1); got != 2 {
		t.Errorf("turn cost without per-turn usage = %v; want the difference, 2", got)
	}
}
