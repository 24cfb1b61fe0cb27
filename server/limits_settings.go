package server

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"strings"

	"parley/launch"
	"parley/store"
	"parley/views"
)

// Bounds of the limits an owner types.
const (
	maxBudgetUSD    = 1_000_000
	minStallSeconds = 10
	maxStallSeconds = 86400
)

// parseLimits reads the limits fields of the settings form; errs names
// each refused field.
func parseLimits(r *http.Request, errs map[string]string) (store.ProjectLimits, views.LimitsForm) {
	f := views.LimitsForm{SessionBudget: strings.TrimSpace(r.PostFormValue("session_budget")),
		DailyBudget: strings.TrimSpace(r.PostFormValue("daily_budget")), StallTimeout: strings.TrimSpace(r.PostFormValue("stall_timeout"))}
	var l store.ProjectLimits
	for _, b := range []struct {
		name, text string
		v          *float64
	}{{"session_budget", f.SessionBudget, &l.SessionBudgetUSD}, {"daily_budget", f.DailyBudget, &l.DailyBudgetUSD}} {
		if b.text == "" {
			continue
		}
		v, err := strconv.ParseFloat(b.text, 64)
		if err != nil || v < 0 || v > maxBudgetUSD || math.IsNaN(v) {
			errs[b.name] = "An amount in dollars such as 2.50, or empty for no limit."
		}
		*b.v = v
	}
	if f.StallTimeout != "" {
		n, err := strconv.Atoi(f.StallTimeout)
		if err != nil || n < minStallSeconds || n > maxStallSeconds {
			errs["stall_timeout"] = "A whole number of seconds from 10 to 86400, or empty for the server's default."
		}
		l.StallSeconds = n
	}
	return l, f
}

// limitsForm is the limits fields showing stored limits.
func limitsForm(l store.ProjectLimits) views.LimitsForm {
	var f views.LimitsForm
	if l.SessionBudgetUSD > 0 {
		f.SessionBudget = strconv.FormatFloat(l.SessionBudgetUSD, 'f', -1, 64)
	}
	if l.DailyBudgetUSD > 0 {
		f.DailyBudget = strconv.FormatFloat(l.DailyBudgetUSD, 'f', -1, 64)
	}
	if l.StallSeconds > 0 {
		f.StallTimeout = strconv.Itoa(l.StallSeconds)
	}
	return f
}

// withLimits fills the settings view's limits, stall default and
// workspace mode.
func (s *Server) withLimits(ctx context.Context, p store.Project, sv views.SettingsView) (views.SettingsView, error) {
	l, err := s.st.ProjectLimits(ctx, p.ID)
	if err != nil {
		return sv, err
	}
	sv.Limits = limitsForm(l)
	if sv.Run, err = s.runLimitsView(ctx, p.ID, sv.Admin); err != nil {
		return sv, err
	}
	sv.DefaultStallTimeout = int(s.cfg.StallTimeout.Seconds())
	sv.GitBase, _ = s.gitOf(p).BaseBranch(ctx, launch.WorkspaceDir(s.cfg.DataDir, p))
	return sv, nil
}
