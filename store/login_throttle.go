package store

import (
	"context"
	"fmt"
	"time"
)

// TakeLoginToken takes one sign-in attempt from addr's budget: a token
// bucket of perMinute tokens refilled evenly over a minute, in one
// statement (the row is locked by the upsert, so concurrent attempts on
// any replica count one by one). When the bucket is empty it returns
// false and how long until a token is back. Rows untouched for two
// minutes (full again) are pruned on the way.
func (s *Store) TakeLoginToken(ctx context.Context, addr string, perMinute int) (bool, time.Duration, error) {
	if _, err := s.pool.Exec(ctx, `DELETE FROM login_address_budget WHERE at < now() - interval '2 minutes'`); err != nil {
		return false, 0, fmt.Errorf("prune sign-in budgets: %w", err)
	}
	var ok bool
	var tokens float64
	// $2 tokens a minute: the bucket refills $2/60 a second, up to $2.
	err := s.pool.QueryRow(ctx, `
		INSERT INTO login_address_budget AS b (addr, tokens, ok, at) VALUES ($1, $2::float8 - 1, true, now())
		ON CONFLICT (addr) DO UPDATE SET
			ok = least($2::float8, b.tokens + greatest(0, extract(epoch FROM now() - b.at)) * $2::float8 / 60) >= 1,
			tokens = least($2::float8, b.tokens + greatest(0, extract(epoch FROM now() - b.at)) * $2::float8 / 60)
				- CASE WHEN least($2::float8, b.tokens + greatest(0, extract(epoch FROM now() - b.at)) * $2::float8 / 60) >= 1 THEN 1 ELSE 0 END,
			at = now()
		RETURNING ok, tokens`, addr, perMinute).Scan(&ok, &tokens)
	if err != nil {
		return false, 0, fmt.Errorf("take sign-in token of %s: %w", addr, err)
	}
	if ok {
		return true, 0, nil
	}
	wait := time.Duration((1 - tokens) * float64(time.Minute) / float64(perMinute))
	return false, wait, nil
}

// loginDeviceTTL is how long a browser stays known without signing in.
const loginDeviceTTL = 180 * 24 * time.Hour

// maxLoginDevices is how many browsers of one person are remembered; the
// least recently used go first.
const maxLoginDevices = 20

// KnownLoginDevice reports whether the device token hash belongs to the
// person whose email this is (and was used within loginDeviceTTL).
func (s *Store) KnownLoginDevice(ctx context.Context, tokenHash []byte, email string) (bool, error) {
	var ok bool
	err := s.pool.QueryRow(ctx, `
		SELECT EXISTS (SELECT 1 FROM login_devices d JOIN users u ON u.id = d.user_id
			WHERE d.token_hash = $1 AND lower(u.email) = lower($2)
			AND d.last_used_at > now() - $3 * interval '1 second')`,
		tokenHash, email, loginDeviceTTL.Seconds()).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("look up sign-in device of %s: %w", email, err)
	}
	return ok, nil
}

// RememberLoginDevice records (or refreshes) a browser userID signed in
// from, and forgets that person's browsers past maxLoginDevices or unused
// for loginDeviceTTL.
func (s *Store) RememberLoginDevice(ctx context.Context, userID int64, tokenHash []byte) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("remember sign-in device: %w", err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `
		INSERT INTO login_devices (token_hash, user_id) VALUES ($1, $2)
		ON CONFLICT (token_hash) DO UPDATE SET last_used_at = now() WHERE login_devices.user_id = $2`,
		tokenHash, userID); err != nil {
		return fmt.Errorf("remember sign-in device: %w", err)
	}
	if _, err := tx.Exec(ctx, `
		DELETE FROM login_devices WHERE user_id = $1 AND (last_used_at < now() - $2 * interval '1 second'
			OR token_hash IN (SELECT token_hash FROM login_devices WHERE user_id = $1
				ORDER BY last_used_at DESC OFFSET $3))`,
		userID, loginDeviceTTL.Seconds(), maxLoginDevices); err != nil {
		return fmt.Errorf("forget old sign-in devices: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("remember sign-in device: %w", err)
	}
	return nil
}
