package runstore

import (
	"context"

	"parley/gateway"
	"parley/store"
)

// NewUsageSink returns the model gateway's sink: it stores usage per
// project, charges each request's priced usage to its session and project,
// and tells the gateway a session's rules (its pinned model, what it may
// still spend).
func NewUsageSink(st *store.Store) gateway.UsageSink { return usageSink{st} }

type usageSink struct{ st *store.Store }

func (u usageSink) AddUsage(ctx context.Context, projectID int64, g gateway.Usage) error {
	if err := u.st.AddUsage(ctx, projectID, store.Usage{Requests: g.Requests, InputTokens: g.InputTokens,
		OutputTokens: g.OutputTokens, Limited: g.Limited}); err != nil {
		return err
	}
	if g.CostUSD <= 0 {
		return nil
	}
	return u.st.ChargeModelUsage(ctx, projectID, g.SessionID, g.CostUSD)
}

// Rules are the session's rules at the gateway: the model its runs are
// started with (the project's, or the session's own that an owner chose
// over MCP) and what is left under the project's spending limits, the
// same limits prompt checks.
func (u usageSink) Rules(ctx context.Context, projectID int64, sessionID string) (gateway.Rules, error) {
	p, err := u.st.GetProject(ctx, projectID)
	if err != nil {
		return gateway.Rules{}, err
	}
	o, err := u.st.GetSessionOptions(ctx, sessionID)
	if err != nil {
		return gateway.Rules{}, err
	}
	r := gateway.Rules{Model: model(p.ProjectSettings, o), SessionLeftUSD: -1, ProjectLeftUSD: -1}
	l, err := u.st.ProjectLimits(ctx, projectID)
	if err != nil || (l.SessionBudgetUSD == 0 && l.DailyBudgetUSD == 0) {
		return r, err
	}
	sp, err := u.st.Spending(ctx, sessionID)
	if err != nil {
		return r, err
	}
	if _, reached := BudgetLeft(l, sp); reached != "" {
		r.Reached = reached + " An owner can raise the limit in the project's settings."
	}
	if l.SessionBudgetUSD > 0 {
		r.SessionLeftUSD = max(l.SessionBudgetUSD-sp.SessionUSD, 0)
	}
	if l.DailyBudgetUSD > 0 {
		r.ProjectLeftUSD = max(l.DailyBudgetUSD-sp.TodayUSD, 0)
	}
	return r, nil
}

// model is the model a session's runs are started with: its own, or else
// its project's (server's session settings lay the options the same way).
func model(p store.ProjectSettings, o store.SessionOptions) string {
	if o.Model != "" {
		return o.Model
	}
	return p.Model
}
