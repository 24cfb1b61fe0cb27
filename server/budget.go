package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"parley/runner"
	"parley/runstore"
	"parley/store"
)

// Spending limits. A project may limit what one session spends over its
// life and what all its sessions spend in a day (UTC). The pinned CLI
// honours --max-budget-usd (measured: it ends the turn before its next model
// request once the process has spent more, with a result of subtype
// error_max_budget_usd), so each process gets what is left of the tighter
// limit when it starts; the runner ends it when the CLI reports the limit,
// and every prompt is checked here first, so a new turn never starts over
// a limit. The model gateway holds the same limits for every model request
// a run makes, the CLI's and its tools' (a curl with the run's token): it
// charges each response's priced usage (server/usage.go) and refuses the
// next request once a limit is reached (gateway/policy.go).

// prompt sends a member's turn, unless the session is archived or a
// spending limit is reached.
func (s *Server) prompt(ctx context.Context, sess store.Session, text string, by runner.Author) error {
	if err := s.refuseArchived(ctx, sess.ID); err != nil {
		return err
	}
	if err := s.checkBudget(ctx, sess); err != nil {
		return err
	}
	if err := s.checkDisk(ctx, sess.ProjectID); err != nil {
		return err
	}
	return s.runs.Prompt(ctx, sess.ID, s.starter(sess), text, by)
}

// checkBudget refuses with the sentence a member sees when the session or
// its project has reached a spending limit.
func (s *Server) checkBudget(ctx context.Context, sess store.Session) error {
	l, err := s.st.ProjectLimits(ctx, sess.ProjectID)
	if err != nil || (l.SessionBudgetUSD == 0 && l.DailyBudgetUSD == 0) {
		return err
	}
	sp, err := s.st.Spending(ctx, sess.ID)
	if err != nil {
		return err
	}
	if _, reached := runstore.BudgetLeft(l, sp); reached != "" {
		return &httpError{http.StatusForbidden, reached + " An owner can raise the limit in the project's settings."}
	}
	return nil
}

// budgetLine is what the session page says about spending and limits; ""
// when the project sets none.
func budgetLine(l store.ProjectLimits, sp store.Spending) string {
	var parts []string
	if l.SessionBudgetUSD > 0 {
		parts = append(parts, "this session "+usd(sp.SessionUSD)+" of "+usd(l.SessionBudgetUSD))
	}
	if l.DailyBudgetUSD > 0 {
		parts = append(parts, "the project today "+usd(sp.TodayUSD)+" of "+usd(l.DailyBudgetUSD))
	}
	if len(parts) == 0 {
		return ""
	}
	return "Spending limits: " + strings.Join(parts, "; ") + "."
}

func usd(v float64) string { return fmt.Sprintf("$%.2f", v) }
