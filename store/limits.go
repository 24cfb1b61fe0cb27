package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// ProjectLimits are a project's spending limits and stall watchdog, edited
// on its settings page. Zero means no limit, or the server's default.
type ProjectLimits struct {
	SessionBudgetUSD float64 `db:"session_budget_usd"` // per session, over its whole life
	DailyBudgetUSD   float64 `db:"daily_budget_usd"`   // per project per day (UTC)
	StallSeconds     int     `db:"stall_seconds"`      // a turn silent this long is interrupted
}

// ProjectLimits returns the project's limits, or ErrNotFound.
func (s *Store) ProjectLimits(ctx context.Context, projectID int64) (ProjectLimits, error) {
	rows, _ := s.pool.Query(ctx, `
		SELECT session_budget_usd, daily_budget_usd, stall_seconds FROM projects WHERE id = $1`, projectID)
	l, err := pgx.CollectOneRow(rows, pgx.RowToStructByName[ProjectLimits])
	if err != nil {
		return ProjectLimits{}, fmt.Errorf("limits of project %d: %w", projectID, notFound(err))
	}
	return l, nil
}

// SetProjectLimits stores the project's limits.
func (s *Store) SetProjectLimits(ctx context.Context, projectID int64, l ProjectLimits) error {
	return s.updateProject(ctx, "set limits", projectID, `
		UPDATE projects SET session_budget_usd = $2, daily_budget_usd = $3, stall_seconds = $4, updated_at = now()
		WHERE id = $1`, l.SessionBudgetUSD, l.DailyBudgetUSD, l.StallSeconds)
}

// Spending is what a session and its project have spent.
type Spending struct {
	SessionUSD float64 // the session's total
	TodayUSD   float64 // the project's turns since midnight UTC
}

// Spending returns the session's total cost and its project's cost today:
// each the larger of what the CLI reported at the end of its turns and
// what the model gateway charged for every request (ChargeModelUsage).
// The gateway sees requests the CLI does not count (a tool's curl with
// the run's token), the CLI prices what it ran by its own table: taking
// the larger means neither can be skipped and nothing is counted twice.
func (s *Store) Spending(ctx context.Context, sessionID string) (Spending, error) {
	var sp Spending
	err := s.pool.QueryRow(ctx, `
		SELECT greatest(s.total_cost_usd, s.model_cost_usd), greatest(coalesce((
			SELECT sum(c.cost_usd) FROM turn_costs c
			WHERE c.project_id = s.project_id
				AND c.created_at >= date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'), 0), coalesce((
			SELECT m.cost_usd FROM project_model_costs m
			WHERE m.project_id = s.project_id AND m.day = (now() AT TIME ZONE 'UTC')::date), 0))
		FROM sessions s WHERE s.id = $1`, sessionID).Scan(&sp.SessionUSD, &sp.TodayUSD)
	if err != nil {
		return Spending{}, fmt.Errorf("spending of session %s: %w", sessionID, notFound(err))
	}
	return sp, nil
}
