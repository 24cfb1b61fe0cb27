package store

import (
	"context"
	"fmt"
)

// InstallationValue returns the value this installation keeps under key,
// keeping proposed first when there is none. Replicas that propose at once
// all get the one value that was kept.
func (s *Store) InstallationValue(ctx context.Context, key, proposed string) (string, error) {
	// Two statements, not one: under read committed the SELECT sees a
	// row that a concurrent INSERT committed while this one waited on it.
	if _, err := s.pool.Exec(ctx, `INSERT INTO installation (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING`, key, proposed); err != nil {
		return "", fmt.Errorf("keep installation %s: %w", key, err)
	}
	var v string
	if err := s.pool.QueryRow(ctx, `SELECT value FROM installation WHERE key = $1`, key).Scan(&v); err != nil {
		return "", fmt.Errorf("read installation %s: %w", key, notFound(err))
	}
	return v, nil
}

// SetInstallationValue keeps value under key, replacing what was there.
func (s *Store) SetInstallationValue(ctx context.Context, key, value string) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO installation (key, value) VALUES ($1, $2)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = now()`, key, value)
	if err != nil {
		return fmt.Errorf("set installation %s: %w", key, err)
	}
	return nil
}

// MaxProjectID is the highest id any project of this installation has had
// (0 when there is none): project N's runs have uid FIRST+N of the range.
func (s *Store) MaxProjectID(ctx context.Context) (int64, error) {
	var n int64
	if err := s.pool.QueryRow(ctx, `SELECT coalesce(max(id), 0) FROM projects`).Scan(&n); err != nil {
		return 0, fmt.Errorf("max project id: %w", err)
	}
	return n, nil
}
