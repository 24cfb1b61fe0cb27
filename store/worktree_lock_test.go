package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"parley/store"
)

// A merge's worktree lock keeps run starts out and waits for the ones
// holding it shared; starts share it with each other; a wait that is
// given up leaves no lock behind; a session without a branch of its own
// has no worktree, and its starts take no lock.
func TestWorktreeLock(t *testing.T) {
	s := open(t)
	withBranch := func() string {
		id := newSession(t, s).ID
		if err := s.SetSessionWorktree(t.Context(), store.SessionWorktree{SessionID: id, Branch: "parley/" + id, Base: "main", State: store.WorktreeActive}); err != nil {
			t.Fatal(err)
		}
		return id
	}
	sess := withBranch()
	// try gives a lock that must be refused a moment, one that must be
	// taken some seconds (a busy machine dials new connections slowly).
	try := func(take func(context.Context, string) (func(), error), wait time.Duration) (func(), error) {
		ctx, cancel := context.WithTimeout(t.Context(), wait)
		defer cancel()
		return take(ctx, sess)
	}
	const refused, taken = 300 * time.Millisecond, 10 * time.Second
	share := func(wait bool) func(context.Context, string) (func(), error) {
		return func(ctx context.Context, id string) (func(), error) { return s.ShareWorktree(ctx, id, wait) }
	}
	merge, err := s.LockWorktree(t.Context(), sess)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := try(share(true), refused); err == nil {
		t.Fatal("a run start took the worktree lock while a merge held it")
	}
	// A start that does not wait is told at once.
	if _, err := s.ShareWorktree(t.Context(), sess, false); !errors.Is(err, store.ErrWorktreeBusy) {
		t.Fatalf("a start that does not wait, while a merge holds the lock: %v; want ErrWorktreeBusy", err)
	}
	if _, err := try(s.LockWorktree, refused); err == nil {
		t.Fatal("a second merge took the worktree lock")
	}
	other := withBranch()
	elsewhere, err := s.ShareWorktree(t.Context(), other, false)
	if err != nil {
		t.Fatalf("another session's start waited for this one's merge: %v", err)
	}
	elsewhere()
	merge()
	merge() // once

	plain := newSession(t, s).ID
	held, err := s.LockWorktree(t.Context(), plain)
	if err != nil {
		t.Fatal(err)
	}
	free, err := try(func(ctx context.Context, _ string) (func(), error) { return s.ShareWorktree(ctx, plain, true) }, taken)
	if err != nil {
		t.Fatalf("a start of a session without a branch waited: %v", err)
	}
	free()
	held()

	start1, err := try(share(true), taken)
	if err != nil {
		t.Fatalf("a start after the merge: %v", err)
	}
	start2, err := try(share(false), taken)
	if err != nil {
		t.Fatalf("two starts do not share the lock: %v", err)
	}
	if _, err := try(s.LockWorktree, refused); err == nil {
		t.Fatal("a merge took the worktree lock while starts held it")
	}
	start1()
	start2()
	merge, err = try(s.LockWorktree, taken)
	if err != nil {
		t.Fatalf("the lock was not free after the starts and the given-up waits: %v", err)
	}
	merge()
}
