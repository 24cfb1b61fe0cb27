package mcpapi

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// elicitor sends the asks of a session an MCP client started to that
// client as elicitation/create (form mode), when the client declared
// elicitation. Its answer resolves the ask through Respond, like any other;
// a teammate who answers first wins, and the elicitation is then cancelled.
type elicitor struct {
	s *Server
}

func newElicitor(s *Server) *elicitor { return &elicitor{s: s} }

// canElicit reports whether the client of ss declared form elicitation on a
// protocol that lets the server send it requests of its own.
func canElicit(ss *mcp.ServerSession) bool {
	if ss == nil {
		return false
	}
	p := ss.InitializeParams()
	if p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil {
		return false
	}
	// From 2026-07-28 a server may ask only inside a request it is serving.
	return p.ProtocolVersion < "2026-07-28" && (p.Capabilities.Elicitation.Form != nil || p.Capabilities.Elicitation.URL == nil)
}

// follow starts eliciting the asks of session id for the client whose call
// is in ctx, until that client goes away or the watch ends.
func (e *elicitor) follow(ctx context.Context, u User, id string) {
	ss := callerOf(ctx)
	if !canElicit(ss) {
		return
	}
	wctx, cancel := context.WithCancel(e.s.watch.ctx)
	changes, err := e.s.sessions.Watch(wctx, u, id)
	if err != nil {
		cancel()
		e.s.log.Warn("mcp elicitation: watch session", "session_id", id, "err", err)
		return
	}
	go func() { _ = ss.Wait(); cancel() }() // both end with the watch's ctx
	go func() { defer cancel(); e.run(wctx, ss, u, id, changes) }()
}

// run keeps one elicitation open per pending input of the session and
// cancels it when the input is no longer pending.
func (e *elicitor) run(ctx context.Context, ss *mcp.ServerSession, u User, id string, changes <-chan struct{}) {
	open := map[string]context.CancelFunc{}
	var wg sync.WaitGroup
	defer func() {
		for _, c := range open {
			c()
		}
		wg.Wait()
	}()
	for {
		st, err := e.s.sessions.Status(ctx, u, GetStatusInput{SessionID: id, OutputLines: 1})
		if err == nil {
			pending := map[string]bool{}
			for _, in := range st.PendingInputs {
				pending[in.InputID] = true
				if _, ok := open[in.InputID]; !ok {
					ictx, c := context.WithCancel(ctx)
					open[in.InputID] = c
					wg.Add(1)
					go func() { defer wg.Done(); e.ask(ictx, ss, u, id, in) }()
				}
			}
			for iid, c := range open {
				if !pending[iid] {
					c() // answered elsewhere: cancel the elicitation
					delete(open, iid)
				}
			}
		}
		// At most one re-read per coalesce period: a streamed reply changes
		// the log many times a second, and a new ask can wait 100 ms.
		select {
		case <-ctx.Done():
			return
		case <-time.After(coalesce):
		}
		select {
		case <-ctx.Done():
			return
		case _, ok := <-changes:
			if !ok {
				return
			}
		}
	}
}

// ask sends one elicitation and applies its answer.
func (e *elicitor) ask(ctx context.Context, ss *mcp.ServerSession, u User, id string, in PendingInput) {
	res, err := ss.Elicit(ctx, &mcp.ElicitParams{Mode: "form", Message: elicitMessage(in), RequestedSchema: elicitSchema(in)})
	if err != nil || ctx.Err() != nil {
		return
	}
	r := RespondInput{SessionID: id, InputID: in.InputID}
	switch res.Action {
	case "accept":
		r.Decision, r.Answers = "allow", map[string]any{}
		if in.Type == "permission" || in.Type == "plan_review" {
			if d, _ := res.Content["decision"].(string); d == "deny" {
				r.Decision = "deny"
			}
			r.Reason, _ = res.Content["reason"].(string)
			r.Answers = nil
		}
		for i, q := range in.Questions {
			if v, ok := res.Content[fmt.Sprint("q", i)]; ok {
				r.Answers[q.Question] = v
			}
		}
	case "decline":
		r.Decision, r.Reason = "deny", "declined in "+clientName(ss)
	default:
		return // cancelled: the ask stays open for others
	}
	if err := e.s.sessions.Respond(ctx, u, r); err != nil {
		var pe *Error
		if !errors.As(err, &pe) {
			e.s.log.Warn("mcp elicitation: respond", "session_id", id, "input_id", in.InputID, "err", err)
		}
	}
}

func clientName(ss *mcp.ServerSession) string {
	if p := ss.InitializeParams(); p != nil && p.ClientInfo != nil && p.ClientInfo.Name != "" {
		return p.ClientInfo.Name
	}
	return "the MCP client"
}

func elicitMessage(in PendingInput) string {
	return "Claude asks (Parley session input " + in.InputID + "): " + in.Description
}

// elicitSchema is the form of an ask: a field per question (q0, q1, …),
// or a decision and a reason for a permission or a plan.
func elicitSchema(in PendingInput) map[string]any {
	props := map[string]any{}
	var required []string
	if len(in.Questions) == 0 {
		props["decision"] = map[string]any{"type": "string", "title": "Decision", "enum": []string{"allow", "deny"}}
		props["reason"] = map[string]any{"type": "string", "title": "Reason (for deny)"}
		required = append(required, "decision")
	}
	for i, q := range in.Questions {
		name := fmt.Sprint("q", i)
		var p map[string]any
		switch {
		case len(q.Options) > 0 && q.MultiSelect:
			p = map[string]any{"type": "array", "items": map[string]any{"type": "string", "enum": q.Options}}
		case len(q.Options) > 0:
			p = map[string]any{"type": "string", "enum": q.Options}
		default:
			p = map[string]any{"type": "string"}
		}
		p["title"] = q.Question
		if q.Header != "" {
			p["description"] = q.Header
		}
		props[name] = p
		if !q.Optional {
			required = append(required, name)
		}
	}
	return map[string]any{"type": "object", "properties": props, "required": required}
}
