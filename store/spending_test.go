package store_test

import (
	"math"
	"testing"
)

// TestSpendingTakesTheLargerCount: a session's and its project's spending
// is the larger of what the CLI reported and what the gateway charged,
// never their sum; the gateway's charge counts even when the CLI reported
// nothing (a tool's curl with the run's token), and another session's
// charge counts for its project's day.
func TestSpendingTakesTheLargerCount(t *testing.T) {
	s := open(t)
	ctx := t.Context()
	a, b := newSession(t, s), newSession(t, s)
	check := func(what string, session, today float64) {
		t.Helper()
		sp, err := s.Spending(ctx, a.ID)
		if err != nil || math.Abs(sp.SessionUSD-session) > 1e-9 || math.Abs(sp.TodayUSD-today) > 1e-9 {
			t.Errorf("%s: spending %+v, %v; want session %v, today %v", what, sp, err, session, today)
		}
	}
	if err := s.ChargeModelUsage(ctx, a.ProjectID, a.ID, 0.5); err != nil {
		t.Fatal(err)
	}
	check("the gateway alone", 0.5, 0.5)
	if err := s.AddSessionUsage(ctx, a.ID, 0.4, 1); err != nil {
		t.Fatal(err)
	}
	check("the CLI reported less of the same requests", 0.5, 0.5)
	if err := s.AddSessionUsage(ctx, a.ID, 0.3, 1); err != nil {
		t.Fatal(err)
	}
	check("the CLI's count is larger", 0.7, 0.7)
	if err := s.ChargeModelUsage(ctx, b.ProjectID, b.ID, 2); err != nil {
		t.Fatal(err)
	}
	check("another session of the project", 0.7, 2.5)
}
