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
	o.ExtraArgs = append(o.ExtraArgs, "--max-budget-usd", strconv.FormatFloat(left, 'f', 6, 64))
	o.BudgetCheck = func(ctx context.Context) string { return l.budgetCheck(ctx, sess) }
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
