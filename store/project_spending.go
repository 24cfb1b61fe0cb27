package store

import (
	"context"
	"fmt"
)

// ProjectSpentToday is what the project has spent since midnight UTC, as
// Spending counts it for any of its sessions: the larger of the CLI's
// turn costs and the model gateway's charges. A new session is checked
// against it before its row is made.
func (s *Store) ProjectSpentToday(ctx context.Context, projectID int64) (float64, error) {
	var usd float64
	err := s.pool.QueryRow(ctx, `
		SELECT greatest(coalesce((
			SELECT sum(c.cost_usd) FROM turn_costs c
			WHERE c.project_id = $1
				AND c.created_at >= date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'), 0), coalesce((
			SELECT m.cost_usd FROM project_model_costs m
			WHERE m.project_id = $1 AND m.day = (now() AT TIME ZONE 'UTC')::date), 0))::float8`, projectID).Scan(&usd)
	if err != nil {
		return 0, fmt.Errorf("spending of project %d today: %w", projectID, err)
	}
	return usd, nil
}
