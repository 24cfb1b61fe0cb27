package runner

import (
	"context"
	"encoding/json"
	"fmt"
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
	if l.Type == "result" {
		// Totals first, so whoever sees the result frame reads them updated.
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
	switch l.Type {
	case "system":
		if l.Subtype == "init" && !r.started {
			r.started = true
			r.changeSession(ctx, SessionChange{ClaudeStarted: true})
		}
	case "control_request":
		r.handleControlRequest(ctx, l.Raw)
	}
}

// handleResult ends a turn: the CLI prints one result per turn, and
// total_cost_usd is its running total for this process.
func (r *Run) handleResult(ctx context.Context, raw json.RawMessage) {
	var res struct {
		TotalCostUSD float64 `json:"total_cost_usd"`
		NumTurns     int     `json:"num_turns"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		r.log.Warn("decode result", "err", err)
	}
	cost := res.TotalCostUSD - r.lastCost
	if cost < 0 {
		cost = res.TotalCostUSD
	}
	r.lastCost = res.TotalCostUSD
	r.busy = false
	r.changeSession(ctx, SessionChange{Status: r.status(), CostUSD: cost, Turns: res.NumTurns})
}

// status is the session status the run's state implies.
func (r *Run) status() string {
	switch {
	case len(r.pending) > 0:
		return "waiting"
	case r.busy:
		return "running"
	default:
		return "idle"
	}
}

func (r *Run) changeSession(ctx context.Context, c SessionChange) {
	if err := r.journal.SessionChanged(ctx, r.spec.SessionID, c); err != nil {
		r.log.Error("update session", "err", err)
	}
}

// controlRequest is a request the CLI writes on stdout:
// {"type":"control_request","request_id":"R","request":{"subtype":"can_use_tool","tool_name":…,"input":…}}.
type controlRequest struct {
	RequestID string `json:"request_id"`
	Request   struct {
		Subtype  string          `json:"subtype"`
		ToolName string          `json:"tool_name"`
		Input    json.RawMessage `json:"input"`
	} `json:"request"`
}

// handleControlRequest answers the CLI's control requests. Every request
// gets an answer, so no run ever hangs on one.
func (r *Run) handleControlRequest(ctx context.Context, raw json.RawMessage) {
	var req controlRequest
	if err := json.Unmarshal(raw, &req); err != nil || req.RequestID == "" {
		r.log.Warn("undecodable control request", "err", err)
		return
	}
	switch req.Request.Subtype {
	case "can_use_tool":
		msg := fmt.Sprintf("Parley does not ask for permission to use %s yet, so the call was denied. "+
			"Carry on without it, or ask the user with the ask_user tool.", req.Request.ToolName)
		r.respond(ctx, req.RequestID, map[string]any{"behavior": "deny", "message": msg})
		r.notice(ctx, "warn", fmt.Sprintf("Claude asked to use %s; Parley denied it (permission asks are not supported yet).", req.Request.ToolName))
	default:
		r.respondError(ctx, req.RequestID, fmt.Sprintf("parley does not handle %q control requests", req.Request.Subtype))
	}
}

// respond writes a successful control_response:
// {"type":"control_response","response":{"subtype":"success","request_id":"R","response":{…}}}.
func (r *Run) respond(ctx context.Context, requestID string, body any) {
	r.writeLogged(ctx, map[string]any{"type": "control_response", "response": map[string]any{
		"subtype": "success", "request_id": requestID, "response": body,
	}})
}

func (r *Run) respondError(ctx context.Context, requestID, msg string) {
	r.writeLogged(ctx, map[string]any{"type": "control_response", "response": map[string]any{
		"subtype": "error", "request_id": requestID, "error": msg,
	}})
}

func (r *Run) writeLogged(ctx context.Context, v any) {
	if err := r.write(ctx, v); err != nil {
		r.log.Error("write to claude", "err", err)
	}
}
