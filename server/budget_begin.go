package server

import (
	"context"
	"net/http"

	"parley/runstore"
	"parley/store"
)

// checkNewSessionBudget refuses a new session of the project, before its
// row is made, when the project has reached its daily spending limit: its
// first prompt would be refused anyway (checkBudget), leaving an empty
// session behind. A new session has spent nothing, so its own limit is
// never reached yet.
func (s *Server) checkNewSessionBudget(ctx context.Context, projectID int64) error {
	l, err := s.st.ProjectLimits(ctx, projectID)
	if err != nil || l.DailyBudgetUSD == 0 {
		return err
	}
	today, err := s.st.ProjectSpentToday(ctx, projectID)
	if err != nil {
		return err
	}
	if _, reached := runstore.BudgetLeft(l, store.Spending{TodayUSD: today}); reached != "" {
		return &httpError{http.StatusForbidden, reached + " An owner can raise the limit in the project's settings."}
	}
	return nil
}
