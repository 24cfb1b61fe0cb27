package warm

import (
	"testing"

	"parley/runner"
)

// TestWithoutBudget: options that differ only in the value of their
// spending limit have different fingerprints (such a process is never
// used) and the same one without the budget (the recheck calls it spent);
// any other difference stays one.
func TestWithoutBudget(t *testing.T) {
	opts := func(args ...string) runner.Options {
		return runner.Options{Spec: runner.Spec{ProjectID: 1, ExtraArgs: args}}
	}
	started := opts("--model", "m", "--max-budget-usd", "10.000000")
	for _, tt := range []struct {
		name             string
		now              runner.Options
		sameFP, sameRest bool
	}{
		{"unchanged", opts("--model", "m", "--max-budget-usd", "10.000000"), true, true},
		{"the day spent", opts("--model", "m", "--max-budget-usd", "6.500000"), false, true},
		{"another model", opts("--model", "n", "--max-budget-usd", "10.000000"), false, false},
		{"the limit removed", opts("--model", "m"), false, false},
	} {
		if got := fingerprint(tt.now) == fingerprint(started); got != tt.sameFP {
			t.Errorf("%s: same fingerprint = %v, want %v", tt.name, got, tt.sameFP)
		}
		if got := fingerprint(withoutBudget(tt.now)) == fingerprint(withoutBudget(started)); got != tt.sameRest {
			t.Errorf("%s: same without the budget = %v, want %v", tt.name, got, tt.sameRest)
		}
	}
	if started.ExtraArgs[3] != "10.000000" {
		t.Errorf("withoutBudget changed its argument's args: %v", started.ExtraArgs)
	}
}
