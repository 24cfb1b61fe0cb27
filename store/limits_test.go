package store_test

import (
	"context"
	"math"
	"testing"

	"parley/store"
)

func TestSpendingAndStatuses(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	a, b := newSession(t, s), newSession(t, s)
	for _, c := range []struct {
		id   string
		cost float64
	}{{a.ID, 1.25}, {a.ID, 0.5}, {b.ID, 2}, {b.ID, 0}} {
		if err := s.AddSessionUsage(ctx, c.id, c.cost, 1); err != nil {
			t.Fatal(err)
		}
	}
	sp, err := s.Spending(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(sp.SessionUSD-1.75) > 1e-9 || math.Abs(sp.TodayUSD-3.75) > 1e-9 {
		t.Errorf("spending = %+v; want session 1.75, today 3.75 (both sessions of the project)", sp)
	}
	for _, st := range []string{"completed", "interrupted", "error", "ended", "running", "waiting", "idle"} {
		if err := s.SetSessionStatus(ctx, a.ID, st); err != nil {
			t.Errorf("status %s refused: %v", st, err)
		}
	}
	if err := s.SetSessionStatus(ctx, a.ID, "failed"); err == nil {
		t.Error("the old status failed is still accepted; it became error")
	}
	if err := s.SetProjectLimits(ctx, a.ProjectID, store.ProjectLimits{SessionBudgetUSD: -1}); err == nil {
		t.Error("a negative limit was stored")
	}
}
