package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// A session's worktree is merged or discarded by one member while nothing
// else starts Claude in it, on any replica: the merge holds the session's
// worktree lock (LockWorktree) from before it stops the session's process
// until git is done, and every run start in the worktree holds it shared
// (ShareWorktree) from before git prepares the worktree until the run is
// recorded open, so a start either is seen by the merge's wait for open
// runs or waits for the merge to end. The locks are Postgres advisory
// locks, each held by a connection of the main pool while it is held: a
// replica that dies frees its locks with its connections. At most half
// the pool holds them at once (lockSlots), so the starts holding one
// always find a connection for the rest of their work; a pool of one
// connection (pool_max_conns=1) holds none, and its starts do not wait.

// LockWorktree takes the session's worktree lock, waiting while a run
// start holds it shared or another merge holds it; release frees it.
func (s *Store) LockWorktree(ctx context.Context, sessionID string) (release func(), err error) {
	if cap(s.lockSlots) == 0 {
		return func() {}, nil
	}
	return s.worktreeLock(ctx, sessionID, "pg_advisory_lock", "pg_advisory_unlock")
}

// ErrWorktreeBusy says a merge or discard holds the session's worktree
// lock, and the caller chose not to wait (ShareWorktree).
var ErrWorktreeBusy = errors.New("the session's worktree is being merged or discarded")

// ShareWorktree holds the session's worktree lock shared with other run
// starts; release frees it. While a merge or discard holds the lock it
// waits, or, when wait is false, returns ErrWorktreeBusy without waiting
// for it, nor for a lock slot while half the pool holds locks (it may
// still wait for a connection). A session without a branch of its own (a
// project that is not a git repository, or a first run) has no worktree
// to merge: nothing is held.
func (s *Store) ShareWorktree(ctx context.Context, sessionID string, wait bool) (release func(), err error) {
	var branch bool
	if err := s.pool.QueryRow(ctx, `SELECT worktree_branch <> '' FROM sessions WHERE id = $1`, sessionID).Scan(&branch); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return func() {}, nil // the run's start reports the missing session
		}
		return nil, fmt.Errorf("lock the worktree of session %s: %w", sessionID, err)
	}
	if !branch || cap(s.lockSlots) == 0 {
		return func() {}, nil
	}
	lock := "pg_advisory_lock_shared"
	if !wait {
		lock = "pg_try_advisory_lock_shared"
	}
	return s.worktreeLock(ctx, sessionID, lock, "pg_advisory_unlock_shared")
}

func (s *Store) worktreeLock(ctx context.Context, sessionID, lock, unlock string) (func(), error) {
	try := strings.HasPrefix(lock, "pg_try_")
	select {
	case s.lockSlots <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("lock the worktree of session %s: %w", sessionID, ctx.Err())
	default:
		if try { // half the pool holds locks: not now
			return nil, ErrWorktreeBusy
		}
		select {
		case s.lockSlots <- struct{}{}:
		case <-ctx.Done():
			return nil, fmt.Errorf("lock the worktree of session %s: %w", sessionID, ctx.Err())
		}
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		<-s.lockSlots
		return nil, fmt.Errorf("lock the worktree of session %s: %w", sessionID, err)
	}
	key := `hashtext('parley.worktree.' || $1)`
	// A pg_try_ lock says whether it took the lock; the others wait and
	// say nothing (void).
	taken, err := true, error(nil)
	if try {
		err = conn.QueryRow(ctx, `SELECT `+lock+`(`+key+`)`, sessionID).Scan(&taken)
	} else {
		_, err = conn.Exec(ctx, `SELECT `+lock+`(`+key+`)`, sessionID)
	}
	if err != nil {
		// Whether the lock was taken as the wait was cancelled is not
		// known: the connection is closed, which frees it either way.
		_ = conn.Conn().Close(context.WithoutCancel(ctx))
		conn.Release()
		<-s.lockSlots
		return nil, fmt.Errorf("lock the worktree of session %s: %w", sessionID, err)
	}
	if !taken {
		conn.Release()
		<-s.lockSlots
		return nil, ErrWorktreeBusy
	}
	var once sync.Once
	return func() { once.Do(func() { s.unlockWorktree(ctx, conn, key, unlock, sessionID) }) }, nil
}

// unlockWorktree frees the lock conn holds and gives conn back, closed if
// the lock could not be freed (which frees it).
func (s *Store) unlockWorktree(ctx context.Context, conn *pgxpool.Conn, key, unlock, sessionID string) {
	defer func() { <-s.lockSlots }()
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	var freed bool
	if err := conn.QueryRow(uctx, `SELECT `+unlock+`(`+key+`)`, sessionID).Scan(&freed); err != nil || !freed {
		_ = conn.Conn().Close(uctx)
	}
	conn.Release()
}
