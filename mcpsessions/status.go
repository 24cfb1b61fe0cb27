package mcpsessions

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"parley/act"
	"parley/mcpapi"
	"parley/runner"
	"parley/store"
	"parley/streamjson"
)

// statusWindow is how many of a session's last events get_status reads.
const statusWindow = 2000

// Status is get_status: how the session stands, its recent output and open asks.
func (b *Backend) Status(ctx context.Context, u mcpapi.User, in mcpapi.GetStatusInput) (mcpapi.StatusOutput, error) {
	sess, err := b.acts.Session(ctx, actorOf(u), in.SessionID, act.View)
	if err != nil {
		return mcpapi.StatusOutput{}, mcpError(err)
	}
	p, err := b.st.GetProject(ctx, sess.ProjectID)
	if err != nil {
		return mcpapi.StatusOutput{}, err
	}
	last, err := b.st.LastSeq(ctx, sess.ID)
	if err != nil {
		return mcpapi.StatusOutput{}, err
	}
	events, err := b.st.EventsAfter(ctx, sess.ID, max(0, last-statusWindow), 0)
	if err != nil {
		return mcpapi.StatusOutput{}, err
	}
	asks, err := b.st.PendingInputs(ctx, sess.ID)
	if err != nil {
		return mcpapi.StatusOutput{}, err
	}
	lines := in.OutputLines
	if lines <= 0 {
		lines = 20
	}
	out := summarize(events, min(lines, 500))
	out.SessionID, out.Project, out.Title = sess.ID, p.Name, sess.Title
	out.CostUSD, out.Turns = sess.TotalCostUSD, sess.NumTurns
	out.URL = "/sessions/" + sess.ID
	out.PendingInputs = []mcpapi.PendingInput{}
	for _, a := range asks {
		out.PendingInputs = append(out.PendingInputs, pendingInput(a))
	}
	out.Status = statusOf(sess, out.Status, len(asks))
	return out, nil
}

// statusOf maps a session to get_status's statuses: running,
// waiting_for_input, completed, error, interrupted. ended is how the last
// turn ended: "" if there is no result, "running" if the last prompt has
// none yet (the session's own status may lag the log).
func statusOf(sess store.Session, ended string, pending int) string {
	switch {
	case pending > 0:
		return "waiting_for_input"
	case sess.Status == "running" || sess.Status == "waiting" || ended == "running":
		return "running"
	case sess.Status == "error" || sess.Status == "failed":
		return "error"
	case ended != "":
		return ended
	}
	return "completed"
}

// summarize reads the log's output lines, tools used, and how the last
// turn ended (as Status: completed, error or interrupted).
func summarize(events []store.Event, lines int) mcpapi.StatusOutput {
	var out mcpapi.StatusOutput
	var text []string
	interrupted := false
	for _, e := range events {
		switch e.Type {
		case runner.TypeInterrupt:
			interrupted = true
		case runner.TypePrompt:
			interrupted = false
			out.Status = "running" // until its result
		case runner.TypeRunEnded:
			if out.Status == "running" {
				out.Status = "error" // the process ended in the middle of a turn
			}
		case "assistant":
			var m streamjson.MessageLine[streamjson.Message]
			_ = json.Unmarshal(e.Payload, &m)
			for _, c := range m.Message.Content {
				switch c.Type {
				case "text":
					text = append(text, strings.Split(strings.TrimRight(c.Text, "\n"), "\n")...)
				case "tool_use":
					if !slices.Contains(out.ToolsUsed, c.Name) {
						out.ToolsUsed = append(out.ToolsUsed, c.Name)
					}
				}
			}
		case "result":
			var r streamjson.Result
			_ = json.Unmarshal(e.Payload, &r)
			out.Result, out.Status = r.Result, "completed"
			switch {
			case interrupted || (r.IsError && r.Subtype == "error_during_execution"):
				out.Status = "interrupted"
			case r.IsError:
				out.Status = "error"
			}
		}
	}
	if len(text) > lines {
		text = text[len(text)-lines:]
	}
	out.Output = append([]string{}, text...)
	if out.ToolsUsed == nil {
		out.ToolsUsed = []string{}
	}
	return out
}

// pendingInput describes an open ask for get_status.
func pendingInput(in store.Input) mcpapi.PendingInput {
	var p runner.AskPayload
	_ = json.Unmarshal(in.Payload, &p)
	pi := mcpapi.PendingInput{InputID: in.ID, ToolName: p.ToolName}
	if len(p.Input) > 0 {
		_ = json.Unmarshal(p.Input, &pi.ToolInput)
	}
	switch {
	case in.Kind == runner.KindPlan:
		pi.Type, pi.Description = "plan_review", "Claude asks to approve its plan:\n\n"+p.Plan
	case in.Kind == runner.KindPermission:
		pi.Type, pi.Description = "permission", "Claude asks to use "+p.ToolName+"."
	case p.Source == runner.SourceClaude:
		pi.Type = "user_question"
	default:
		pi.Type = "ask_user"
	}
	if in.Kind == runner.KindQuestion {
		var qs []string
		for _, q := range p.TheForm().Questions {
			mq := mcpapi.Question{Question: q.Question, Header: q.Header, MultiSelect: q.MultiSelect, Optional: q.Optional}
			for _, o := range q.Choices() {
				mq.Options = append(mq.Options, o.Label)
			}
			pi.Questions = append(pi.Questions, mq)
			qs = append(qs, q.Question)
		}
		pi.Description = "Claude asks: " + strings.Join(qs, " / ")
	}
	return pi
}

// ListSessions lists the sessions of u's projects, Parley's and those on
// disk, the latest first.
func (b *Backend) ListSessions(ctx context.Context, u mcpapi.User, in mcpapi.ListSessionsInput) (mcpapi.ListSessionsOutput, error) {
	list, err := b.st.ProjectsFor(ctx, u.ID, u.Admin)
	if err != nil {
		return mcpapi.ListSessionsOutput{}, err
	}
	if in.Project != "" {
		p, _, err := b.findProject(ctx, u, in.Project, act.View)
		if err != nil {
			return mcpapi.ListSessionsOutput{}, err
		}
		list = slices.DeleteFunc(list, func(x store.ProjectWithRole) bool { return x.ID != p.ID })
	}
	var out []mcpapi.SessionSummary
	var at []time.Time
	for _, p := range list {
		sessions, err := b.st.ListSessions(ctx, p.ID)
		if err != nil {
			return mcpapi.ListSessionsOutput{}, err
		}
		for _, x := range sessions {
			out = append(out, mcpapi.SessionSummary{SessionID: x.ID, Project: p.Name, ProjectID: p.ID, Title: x.Title,
				Status: statusOf(x, "", 0), Source: "parley", UpdatedAt: x.UpdatedAt.UTC().Format(time.RFC3339)})
			at = append(at, x.UpdatedAt)
		}
		found, err := b.diskSessions(ctx, p.Project)
		if err != nil {
			return mcpapi.ListSessionsOutput{}, err
		}
		for _, d := range found {
			out = append(out, mcpapi.SessionSummary{SessionID: d.ID, Project: p.Name, ProjectID: p.ID, Title: d.Title,
				Status: "completed", Source: "disk", UpdatedAt: d.Updated.UTC().Format(time.RFC3339)})
			at = append(at, d.Updated)
		}
	}
	idx := make([]int, len(out))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return at[b].Compare(at[a]) })
	limit := in.Limit
	if limit <= 0 {
		limit = 50
	}
	res := mcpapi.ListSessionsOutput{Sessions: []mcpapi.SessionSummary{}}
	for _, i := range idx[:min(len(idx), limit, 500)] {
		res.Sessions = append(res.Sessions, out[i])
	}
	return res, nil
}
