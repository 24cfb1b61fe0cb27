package runstore

import (
	"testing"

	"parley/store"
)

func TestBudgetLeft(t *testing.T) {
	for _, tt := range []struct {
		name    string
		l       store.ProjectLimits
		sp      store.Spending
		left    float64
		reached string
	}{
		{"no limits", store.ProjectLimits{}, store.Spending{SessionUSD: 5, TodayUSD: 50}, -1, ""},
		{"session is tighter", store.ProjectLimits{SessionBudgetUSD: 2, DailyBudgetUSD: 10}, store.Spending{SessionUSD: 1.5, TodayUSD: 3}, 0.5, ""},
		{"day is tighter", store.ProjectLimits{SessionBudgetUSD: 2, DailyBudgetUSD: 10}, store.Spending{SessionUSD: 0.5, TodayUSD: 9.75}, 0.25, ""},
		{"session reached", store.ProjectLimits{SessionBudgetUSD: 2}, store.Spending{SessionUSD: 2}, 0, "This session has spent $2.00, its limit is $2.00."},
		{"day reached", store.ProjectLimits{DailyBudgetUSD: 1}, store.Spending{TodayUSD: 1.2}, 0, "The project has spent $1.20 today, its daily limit is $1.00."},
	} {
		left, reached := BudgetLeft(tt.l, tt.sp)
		if left != tt.left || reached != tt.reached {
			t.Errorf("%s: BudgetLeft = %v, %q; want %v, %q", tt.name, left, reached, tt.left, tt.reached)
		}
	}
}
