package store

import (
	"context"
	"fmt"
)

// ChargeModelUsage adds what one model request cost, as the model gateway
// priced it, to the session's gateway total and to its project's for the
// day (UTC). A session deleted meanwhile still counts for its project.
// Spending reads these totals beside the CLI's own.
func (s *Store) ChargeModelUsage(ctx context.Context, projectID int64, sessionID string, costUSD float64) error {
	_, err := s.pool.Exec(ctx, `
		WITH s AS (
			UPDATE sessions SET model_cost_usd = model_cost_usd + $3 WHERE id = $2 AND project_id = $1
		)
		INSERT INTO project_model_costs (project_id, day, cost_usd)
		VALUES ($1, (now() AT TIME ZONE 'UTC')::date, $3)
		ON CONFLICT (project_id, day) DO UPDATE SET cost_usd = project_model_costs.cost_usd + EXCLUDED.cost_usd`,
		projectID, sessionID, costUSD)
	if err != nil {
		return fmt.Errorf("charge model usage of session %s: %w", sessionID, err)
	}
	return nil
}
