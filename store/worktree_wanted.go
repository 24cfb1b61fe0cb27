package store

import (
	"context"
	"fmt"
)

// WorktreeWanted says whether a merge or discard asks for the session's
// worktree lock (LockWorktree) on any replica: it waits for the lock, or
// holds it. A start ahead of any message, which holds the lock shared
// while it primes, then gives way (runner.Deps.StartYield): nobody waits
// on it, and a merge should not wait a second for it to be refused.
//
// Postgres lists an advisory lock on a bigint key k in pg_locks with
// classid = k's high 32 bits and objid = its low 32 bits, objsubid 1; an
// exclusive one (pg_advisory_lock) has mode ExclusiveLock.
func (s *Store) WorktreeWanted(ctx context.Context, sessionID string) (bool, error) {
	var wanted bool
	err := s.pool.QueryRow(ctx, `
		SELECT EXISTS (SELECT 1 FROM pg_locks
			WHERE locktype = 'advisory' AND mode = 'ExclusiveLock' AND objsubid = 1
			AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
			AND ((classid::int8 << 32) | objid::int8) = hashtext('parley.worktree.' || $1)::int8)`,
		sessionID).Scan(&wanted)
	if err != nil {
		return false, fmt.Errorf("who waits for the worktree of session %s: %w", sessionID, err)
	}
	return wanted, nil
}
