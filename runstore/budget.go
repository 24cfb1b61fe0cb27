package runstore

import (
	"fmt"

	"parley/store"
)

// BudgetLeft is what the session may still spend under the tighter of the
// project's limits (-1 = no limit), or the sentence that says which limit
// is reached.
func BudgetLeft(l store.ProjectLimits, sp store.Spending) (left float64, reached string) {
	left = -1
	if l.SessionBudgetUSD > 0 {
		if sp.SessionUSD >= l.SessionBudgetUSD {
			return 0, "This session has spent " + usd(sp.SessionUSD) + ", its limit is " + usd(l.SessionBudgetUSD) + "."
		}
		left = l.SessionBudgetUSD - sp.SessionUSD
	}
	if l.DailyBudgetUSD > 0 {
		if sp.TodayUSD >= l.DailyBudgetUSD {
			return 0, "The project has spent " + usd(sp.TodayUSD) + " today, its daily limit is " + usd(l.DailyBudgetUSD) + "."
		}
		if d := l.DailyBudgetUSD - sp.TodayUSD; left < 0 || d < left {
			left = d
		}
	}
	return left, ""
}

func usd(v float64) string { return fmt.Sprintf("$%.2f", v) }
