package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"parley/askuser"
	"parley/streamjson"
)

// handleLine records one stdout line and reacts to the few types that need it.
func (r *Run) handleLine(ctx context.Context, l Line) {
	if l.Err != nil {
		r.log.Warn("malformed claude output", "err", l.Err)
		if err := r.record(ctx, TypeMalformed, l.Raw); err != nil {
			r.log.Error("record malformed line", "err", err)
		}
		return
	}
	if readyAnswer(l) {
		return // the answer to a start ahead's initialize (ahead.go)
	}
	if r.switchEcho(l) {
		return // a set_model's echo: the switch event says it (modeswitch.go)
	}
	if l.Type == "user" && r.promptRead(l.Raw) {
		return // the prompt event says it already
	}
	if l.Type == "result" {
		// A turn's end is not batched: what came before it is written, then
		// the totals, then the result, so whoever sees the result (frame or
		// log) reads the totals and status updated, and the other way round.
		r.flush(ctx)
		defer func(b bool) { r.batching = b }(r.batching)
		r.batching = false
		r.handleResult(ctx, l.Raw)
	}
	if err := r.record(ctx, l.Type, l.Raw); err != nil {
		// Postgres refuses some valid JSON (a \u0000 in a string): keep what
		// it will take and say why, rather than lose the line silently.
		r.log.Warn("store claude output", "type", l.Type, "err", err)
		m := malformed(l.Raw, fmt.Errorf("could not be stored: %w", err))
		if err := r.record(ctx, TypeMalformed, m.Raw); err != nil {
			r.log.Error("record unstorable line", "err", err)
		}
	}
	r.noteCall(l) // what a handed-over call is doing, should its process end
	switch l.Type {
	case "system":
		if l.Subtype == "init" {
			r.initSeen, r.unconfirmed = true, nil
			r.turnBegun()
			r.checkMCP(ctx, l.Raw)
		}
		if l.Subtype == "init" && !r.started {
			r.started = true
			r.changeSession(ctx, SessionChange{ClaudeStarted: true})
		}
	case "assistant":
		r.rememberPlans(l.Raw)
	case "user":
		r.confirmDeliveries(ctx, l.Raw)
	case "control_request":
		r.handleControlRequest(ctx, l.Raw)
	case "control_cancel_request":
		r.handleControlCancel(ctx, l.Raw)
	case "control_response":
		r.switchAnswered(ctx, l.Raw)
	case "result":
		r.afterResult(ctx, l.Raw)
		r.turnFinished(ctx) // after the result: a turn stopped next is logged after it
	}
}

// handleResult ends a turn: the CLI prints one result per turn, and
// total_cost_usd is its running total for this process.
func (r *Run) handleResult(ctx context.Context, raw json.RawMessage) {
	var res resultFields
	if err := json.Unmarshal(raw, &res); err != nil {
		r.log.Warn("decode result", "err", err)
	}
	// --resume of a conversation the CLI never saved (it was killed before
	// writing its transcript) fails with "No conversation found" and exits:
	// the supervisor then starts a fresh conversation and sends the lost
	// turns again, so an answer still reaches Claude.
	if r.spec.Resume && !r.initSeen && res.IsError && slices.ContainsFunc(res.Errors, func(e string) bool {
		return strings.Contains(e, "No conversation found")
	}) {
		r.resumeFailed = true
	}
	cost := res.turnCost(r.lastCost)
	r.lastCost = res.TotalCostUSD
	// One result ends one turn; a turn queued behind it starts now. But
	// the CLI folds a prompt sent while a tool call runs into the running
	// turn, with one result for both (fold_test.go): the turns left are at
	// most the prompts it has not read yet.
	if r.turns > 0 {
		r.turns--
	}
	r.turns = min(r.turns, r.unread)
	r.outcome = res.outcome()
	r.turnEnded()
	r.changeSession(ctx, SessionChange{Status: r.status(), CostUSD: cost, Turns: res.NumTurns})
}

// promptRead says whether raw, a user line, is the CLI's echo of a prompt
// it read (--replay-user-messages), and counts it read.
func (r *Run) promptRead(raw json.RawMessage) bool {
	var u struct {
		IsReplay bool `json:"isReplay"`
	}
	if json.Unmarshal(raw, &u) != nil || !u.IsReplay {
		return false
	}
	r.unread = max(r.unread-1, 0)
	return true
}

// status is the session status the run's state implies.
func (r *Run) status() string {
	switch {
	case len(r.pending) > 0:
		return StatusWaiting
	case r.turns > 0:
		return StatusRunning
	default:
		return r.outcome
	}
}

func (r *Run) changeSession(ctx context.Context, c SessionChange) {
	// Retried whole while the database is away: its parts are updates that
	// may repeat, but for the usage added last, which a reply lost after
	// its commit would count twice.
	if err := r.persist(ctx, func(ctx context.Context) error { return r.journal.SessionChanged(ctx, r.spec.SessionID, c) }, nil); err != nil {
		r.log.Error("update session", "err", err)
	}
}

// handleControlRequest answers the CLI's control requests. can_use_tool
// becomes an ask; any other request gets an error answer at once, so no
// run ever hangs on one.
func (r *Run) handleControlRequest(ctx context.Context, raw json.RawMessage) {
	var req streamjson.ControlRequest
	if err := json.Unmarshal(raw, &req); err != nil || req.RequestID == "" {
		r.log.Warn("undecodable control request", "err", err)
		return
	}
	if req.Request.Subtype != "can_use_tool" {
		r.respondError(ctx, req.RequestID, fmt.Sprintf("parley does not handle %q control requests", req.Request.Subtype))
		return
	}
	p, err := r.askFor(req)
	if err == nil {
		_, err = r.openAsk(ctx, p, r.permTimeout)
	}
	if err != nil {
		// Never an invented answer: deny, and say why.
		r.log.Error("open permission ask", "tool", req.Request.ToolName, "err", err)
		r.respond(ctx, req.RequestID, map[string]any{"behavior": "deny",
			"message": "Parley could not put this request to the user (" + err.Error() + "), so it was denied."})
		r.notice(ctx, "error", "Claude asked to use "+req.Request.ToolName+", but Parley could not show the request; it was denied.")
	}
}

// askFor turns a can_use_tool request into an ask: AskUserQuestion is a
// question, ExitPlanMode a plan, anything else a permission.
func (r *Run) askFor(req streamjson.ControlRequest) (AskPayload, error) {
	q := req.Request
	p := AskPayload{RequestID: req.RequestID, ToolName: q.ToolName, ToolUseID: q.ToolUseID, Input: q.Input}
	switch q.ToolName {
	case "AskUserQuestion":
		// input: {questions[1..4]{question, header, options[2..4]{label, description}, multiSelect}}
		var in struct {
			Questions []askuser.Question `json:"questions"`
		}
		if err := json.Unmarshal(q.Input, &in); err != nil {
			return p, fmt.Errorf("decode AskUserQuestion input: %w", err)
		}
		f := askuser.Form{Questions: in.Questions}
		if err := f.Validate(); err != nil {
			return p, fmt.Errorf("AskUserQuestion input: %w", err)
		}
		p.Kind, p.Source, p.Form = KindQuestion, SourceClaude, &f
	case "ExitPlanMode":
		// input: {"plan": "<file text>", "planFilePath": …}, or {} when the
		// model wrote no plan file: then show the plan argument of the
		// model's own tool_use, which the CLI drops.
		var in streamjson.PlanInput
		_ = json.Unmarshal(q.Input, &in)
		p.Kind, p.Plan, p.PlanFile = KindPlan, in.Plan, in.PlanFilePath
		if p.Plan == "" {
			p.Plan = r.plans[q.ToolUseID]
		}
		delete(r.plans, q.ToolUseID)
	default:
		p.Kind, p.Suggestions = KindPermission, q.Suggestions
	}
	return p, nil
}

// rememberPlans keeps the plan argument of ExitPlanMode tool uses until the
// permission request for them arrives.
func (r *Run) rememberPlans(raw json.RawMessage) {
	var a streamjson.MessageLine[streamjson.Message]
	if json.Unmarshal(raw, &a) != nil {
		return
	}
	for _, b := range a.Message.Content {
		if b.Type != "tool_use" || b.Name != "ExitPlanMode" || len(r.plans) >= 16 {
			continue
		}
		var in streamjson.PlanInput      // the model's own plan argument
		_ = json.Unmarshal(b.Input, &in) // a stray planFilePath must not lose the plan
		if in.Plan != "" {
			r.plans[b.ID] = in.Plan
		}
	}
}

// handleControlCancel closes the ask of a control request the CLI gave up on:
// {"type":"control_cancel_request","request_id":"R"}.
func (r *Run) handleControlCancel(ctx context.Context, raw json.RawMessage) {
	var c streamjson.ControlCancel
	if json.Unmarshal(raw, &c) != nil {
		return
	}
	for _, pa := range r.pending {
		if pa.attached && pa.p.RequestID == c.RequestID {
			if err := r.resolve(ctx, pa, askuser.StatusCancelled, Response{Reason: "Claude withdrew the request"}); err != nil {
				r.log.Warn("cancel ask", "input_id", pa.p.InputID, "err", err)
			}
		}
	}
}

// respond writes a successful control_response carrying body.
func (r *Run) respond(ctx context.Context, requestID string, body any) {
	r.writeLogged(ctx, streamjson.NewControlSuccess(requestID, body))
}

func (r *Run) respondError(ctx context.Context, requestID, msg string) {
	r.writeLogged(ctx, streamjson.NewControlError(requestID, msg))
}

func (r *Run) writeLogged(ctx context.Context, v any) {
	if err := r.write(ctx, v); err != nil {
		r.log.Error("write to claude", "err", err)
	}
}
