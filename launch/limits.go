package launch

import (
	"context"
	"strconv"
	"time"

	"parley/runner"
	"parley/runstore"
	"parley/store"
)

// applyLimits sets a run's cgroup limits, file cap, watchdog and spending
// limit from its project's settings and the server's defaults.
func (l *Launcher) applyLimits(ctx context.Context, o *runner.Options, sess store.Session) error {
	if err := l.applyRunLimits(ctx, o, sess.ProjectID); err != nil {
		return err
	}
	lim, err := l.st.ProjectLimits(ctx, sess.ProjectID)
	if err != nil {
		return err
	}
	o.StallTimeout = l.cfg.StallTimeout
	if lim.StallSeconds > 0 {
		o.StallTimeout = time.Duration(lim.StallSeconds) * time.Second
	}
	if lim.SessionBudgetUSD == 0 && lim.DailyBudgetUSD == 0 {
		return nil
	}
	sp, err := l.st.Spending(ctx, sess.ID)
	if err != nil {
		return err
	}
	left, reached := runstore.BudgetLeft(lim, sp)
	if reached != "" {
		return l.hooks.Refused(reached + " An owner can raise the limit in the project's settings.")
	}
	o.ExtraArgs = append(o.ExtraArgs, budgetArgs(left)...)
	o.BudgetCheck = func(ctx context.Context) string { return l.budgetCheck(ctx, sess) }
	return nil
}

// budgetArgs are the CLI flags that stop a run once it has spent left
// (USD), as both a start and a process started ahead get them: a process
// ahead is used only when its flags are the ones a start gets then.
func budgetArgs(left float64) []string {
	return []string{"--max-budget-usd", strconv.FormatFloat(left, 'f', 6, 64)}
}

// applyWarmBudget gives a process started ahead for the project the
// spending limit the cold start of a new session would get now: a new
// session has spent nothing, so what is left is its own budget, or less
// what the project has spent today under a daily budget. The value moves
// with the day's spending; a process ahead whose value is no longer the
// one a start gets is never used (package warm compares them). With the
// day's limit reached no process is started ahead (ErrNotWarmed): a new
// session is refused.
func (l *Launcher) applyWarmBudget(ctx context.Context, o *runner.Options, projectID int64) error {
	lim, err := l.st.ProjectLimits(ctx, projectID)
	if err != nil || (lim.SessionBudgetUSD == 0 && lim.DailyBudgetUSD == 0) {
		return err
	}
	var sp store.Spending
	if lim.DailyBudgetUSD > 0 {
		if sp.TodayUSD, err = l.st.ProjectSpentToday(ctx, projectID); err != nil {
			return err
		}
	}
	left, reached := runstore.BudgetLeft(lim, sp)
	if reached != "" {
		return ErrNotWarmed
	}
	o.ExtraArgs = append(o.ExtraArgs, budgetArgs(left)...)
	return nil
}

// applyRunLimits gives a run its project's cgroup limits and, with a disk
// quota, a file size cap no larger than it; a project over its quota
// does not start.
func (l *Launcher) applyRunLimits(ctx context.Context, o *runner.Options, projectID int64) error {
	rl, err := l.st.ProjectRunLimits(ctx, projectID)
	if err != nil {
		return err
	}
	o.Limits.Tasks, o.Limits.Memory, o.Limits.CPUWeight = rl.Tasks, rl.Memory, rl.CPUWeight
	o.MaxFile, err = l.hooks.DiskCap(ctx, projectID, rl)
	return err
}

// budgetCheck is the notice a session shows after a turn that reached a
// spending limit, or "".
func (l *Launcher) budgetCheck(ctx context.Context, sess store.Session) string {
	lim, err1 := l.st.ProjectLimits(ctx, sess.ProjectID)
	sp, err2 := l.st.Spending(ctx, sess.ID)
	if err1 != nil || err2 != nil {
		return ""
	}
	if _, reached := runstore.BudgetLeft(lim, sp); reached != "" {
		return "Claude stopped: the spending limit was reached. " + reached + " An owner can raise the limit in the project's settings."
	}
	return ""
}
