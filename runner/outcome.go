package runner

import (
	"context"
	"encoding/json"
	"strings"

	"parley/streamjson"
)

// Session statuses a run sets (sessions.status). A new session is "idle"
// until its first run.
const (
	StatusRunning     = "running"     // a turn is under way
	StatusWaiting     = "waiting"     // an ask is open
	StatusCompleted   = "completed"   // the last turn finished
	StatusInterrupted = "interrupted" // the last turn was stopped: Stop, the watchdog or a spending limit
	StatusError       = "error"       // the last turn or the process failed
	StatusEnded       = "ended"       // the process ended; the next message resumes the session
)

// budgetSubtype is the result subtype of a turn the CLI ended at
// --max-budget-usd. Measured on 2.1.328: {"subtype":"error_max_budget_usd",
// "is_error":true,"errors":["Reached maximum budget ($2)"],
// "terminal_reason":"budget_exhausted"}, printed before the next model
// request once the process has spent more than its budget.
const budgetSubtype = "error_max_budget_usd"

// resultFields is a result line, with what the run makes of it.
type resultFields streamjson.Result

// turnCost is what the turn of res cost, given the process's running
// total before it. A resumed process's total_cost_usd includes what the
// conversation cost before (measured on 2.1.328), so the turn's cost is
// read from model_usage_since_last_result where it is there.
func (res resultFields) turnCost(lastTotal float64) float64 {
	if res.SinceLast != nil {
		var c float64
		for _, m := range res.SinceLast {
			c += m.CostUSD
		}
		return c
	}
	if c := res.TotalCostUSD - lastTotal; c >= 0 {
		return c
	}
	return res.TotalCostUSD
}

// TurnOutcome is the session status a result line leaves: completed,
// interrupted (an interrupt, or a limit: budget, turns) or error.
func TurnOutcome(raw json.RawMessage) string {
	var res resultFields
	_ = json.Unmarshal(raw, &res)
	return res.outcome()
}

func (res resultFields) outcome() string {
	switch {
	// An interrupt ends the turn with subtype error_during_execution.
	case res.Subtype == "error_during_execution", res.Subtype == budgetSubtype, res.Subtype == "error_max_turns":
		return StatusInterrupted
	case res.IsError, strings.HasPrefix(res.Subtype, "error"):
		return StatusError
	}
	return StatusCompleted
}

// afterResult runs once a result line is in the log, with the turn's cost
// already added to the session's. A turn the CLI ended at its spending
// limit, or one after which a limit is reached, gets a notice, and the
// process is ended: its --max-budget-usd was fixed when it started, so the
// next turn starts a process with the limits and spending as they are then.
func (r *Run) afterResult(ctx context.Context, raw json.RawMessage) {
	var res resultFields
	_ = json.Unmarshal(raw, &res)
	reached := ""
	if r.budgetCheck != nil {
		reached = r.budgetCheck(ctx)
	}
	if res.Subtype != budgetSubtype && reached == "" {
		return
	}
	if reached == "" {
		reached = "Claude stopped: the spending limit was reached."
	}
	r.notice(ctx, "warn", reached)
	r.log.Info("spending limit reached", "errors", res.Errors)
	// The session cannot go on until the limit is raised: interrupted.
	r.endStatus = StatusInterrupted
	r.stopping = true
	r.cancel()
}
