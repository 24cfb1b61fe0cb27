package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// AskSettings are a project's settings for asks beyond their timeouts.
type AskSettings struct {
	// ExpiryDays: a detached ask (its process gone) that nobody answers
	// expires after this many days.
	ExpiryDays int `db:"expiry_days"`
	// MaxAskTimeoutSeconds is the longest wait the model may choose for one
	// ask_user call; 0 = the project's ask timeout.
	MaxAskTimeoutSeconds int `db:"max_ask_timeout_seconds"`
}

// DefaultExpiryDays is how long a detached ask waits when the project never
// set it.
const DefaultExpiryDays = 7

// AskSettingsOf returns a project's ask settings, or the defaults.
func (s *Store) AskSettingsOf(ctx context.Context, projectID int64) (AskSettings, error) {
	rows, _ := s.pool.Query(ctx, `
		SELECT expiry_days, max_ask_timeout_seconds FROM project_ask_settings WHERE project_id = $1`, projectID)
	a, err := pgx.CollectOneRow(rows, pgx.RowToStructByName[AskSettings])
	if errors.Is(err, pgx.ErrNoRows) {
		return AskSettings{ExpiryDays: DefaultExpiryDays}, nil
	}
	if err != nil {
		return AskSettings{}, fmt.Errorf("ask settings of project %d: %w", projectID, err)
	}
	return a, nil
}

// SetAskSettings stores a project's ask settings.
func (s *Store) SetAskSettings(ctx context.Context, projectID int64, a AskSettings) error {
	_, err := s.pool.Exec(ctx, `
		INSERT INTO project_ask_settings (project_id, expiry_days, max_ask_timeout_seconds) VALUES ($1, $2, $3)
		ON CONFLICT (project_id) DO UPDATE SET expiry_days = $2, max_ask_timeout_seconds = $3`,
		projectID, a.ExpiryDays, a.MaxAskTimeoutSeconds)
	if err != nil {
		return fmt.Errorf("set ask settings of project %d: %w", projectID, err)
	}
	return nil
}

// ExpiringInput is a detached pending input and when it expires.
type ExpiringInput struct {
	ID        string    `db:"id"`
	SessionID string    `db:"session_id"`
	ProjectID int64     `db:"project_id"`
	ExpiresAt time.Time `db:"expires_at"`
	Days      int       `db:"days"`
}

// detachedExpiry selects each detached pending input (no run, or its run
// ended) with the time its project's expiry passes.
const detachedExpiry = `
	SELECT i.id, i.session_id, s.project_id, coalesce(a.expiry_days, 7) AS days,
		i.created_at + make_interval(days => coalesce(a.expiry_days, 7)) AS expires_at
	FROM inputs i
	JOIN sessions s ON s.id = i.session_id
	LEFT JOIN project_ask_settings a ON a.project_id = s.project_id
	LEFT JOIN runs r ON r.id = i.run_id
	WHERE i.status = 'pending' AND (r.id IS NULL OR r.ended_at IS NOT NULL)`

// ExpiredInputs returns the detached pending inputs whose expiry has passed
// at now, oldest first, and when the next one that has not expires (nil if
// none is waiting).
func (s *Store) ExpiredInputs(ctx context.Context, now time.Time) ([]ExpiringInput, *time.Time, error) {
	rows, _ := s.pool.Query(ctx, `SELECT * FROM (`+detachedExpiry+`) d WHERE expires_at <= $1 ORDER BY expires_at, id`, now)
	due, err := pgx.CollectRows(rows, pgx.RowToStructByName[ExpiringInput])
	if err != nil {
		return nil, nil, fmt.Errorf("expired inputs: %w", err)
	}
	var next *time.Time
	err = s.pool.QueryRow(ctx, `SELECT min(expires_at) FROM (`+detachedExpiry+`) d WHERE expires_at > $1`, now).Scan(&next)
	if err != nil {
		return nil, nil, fmt.Errorf("next input expiry: %w", err)
	}
	return due, next, nil
}

// SettleWaiting sets a waiting session with no pending input left to ended
// (its process is gone; the next message resumes it).
func (s *Store) SettleWaiting(ctx context.Context, sessionID string) error {
	_, err := s.pool.Exec(ctx, `
		UPDATE sessions SET status = 'ended', updated_at = now()
		WHERE id = $1 AND status = 'waiting'
			AND NOT EXISTS (SELECT 1 FROM inputs WHERE session_id = $1 AND status = 'pending')`, sessionID)
	if err != nil {
		return fmt.Errorf("settle session %s: %w", sessionID, err)
	}
	return nil
}
