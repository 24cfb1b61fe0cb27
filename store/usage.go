package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Usage is a project's model usage over some days, as the gateway counted it.
type Usage struct {
	Requests     int64 `db:"requests"`
	InputTokens  int64 `db:"input_tokens"`
	OutputTokens int64 `db:"output_tokens"`
	Limited      int64 `db:"limited"` // requests refused by a rate limit
}

// AddUsage adds u to the project's usage of today.
func (s *Store) AddUsage(ctx context.Context, projectID int64, u Usage) error {
	_, err := s.pool.Exec(ctx, `
		INSERT INTO project_usage (project_id, requests, input_tokens, output_tokens, limited)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (project_id, day) DO UPDATE SET
			requests = project_usage.requests + EXCLUDED.requests,
			input_tokens = project_usage.input_tokens + EXCLUDED.input_tokens,
			output_tokens = project_usage.output_tokens + EXCLUDED.output_tokens,
			limited = project_usage.limited + EXCLUDED.limited`,
		projectID, u.Requests, u.InputTokens, u.OutputTokens, u.Limited)
	if err != nil {
		return fmt.Errorf("add usage of project %d: %w", projectID, err)
	}
	return nil
}

// ProjectUsage is the project's usage over the last days days, today included.
func (s *Store) ProjectUsage(ctx context.Context, projectID int64, days int) (Usage, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT coalesce(sum(requests), 0)::bigint AS requests, coalesce(sum(input_tokens), 0)::bigint AS input_tokens,
		       coalesce(sum(output_tokens), 0)::bigint AS output_tokens, coalesce(sum(limited), 0)::bigint AS limited
		FROM project_usage WHERE project_id = $1 AND day > current_date - $2::int`, projectID, days)
	if err != nil {
		return Usage{}, fmt.Errorf("usage of project %d: %w", projectID, err)
	}
	u, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Usage])
	if err != nil {
		return Usage{}, fmt.Errorf("usage of project %d: %w", projectID, err)
	}
	return u, nil
}
