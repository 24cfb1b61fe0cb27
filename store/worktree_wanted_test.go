package store_test

import (
	"testing"
	"time"

	"parley/store"
)

// WorktreeWanted sees a merge that waits for the session's worktree lock
// (and one that holds it), and nothing for run starts sharing it or for
// another session's merge.
func TestWorktreeWanted(t *testing.T) {
	s := open(t)
	withBranch := func() string {
		id := newSession(t, s).ID
		if err := s.SetSessionWorktree(t.Context(), store.SessionWorktree{SessionID: id, Branch: "parley/" + id, Base: "main", State: store.WorktreeActive}); err != nil {
			t.Fatal(err)
		}
		return id
	}
	sess, other := withBranch(), withBranch()
	wanted := func(id string) bool {
		t.Helper()
		w, err := s.WorktreeWanted(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	start, err := s.ShareWorktree(t.Context(), sess, false)
	if err != nil {
		t.Fatal(err)
	}
	if wanted(sess) {
		t.Fatal("a run start's shared lock reads as a merge")
	}
	elsewhere, err := s.LockWorktree(t.Context(), other)
	if err != nil {
		t.Fatal(err)
	}
	if wanted(sess) {
		t.Fatal("another session's merge reads as this one's")
	}
	locked := make(chan func(), 1)
	go func() {
		release, err := s.LockWorktree(t.Context(), sess)
		if err != nil {
			t.Error(err)
			release = func() {}
		}
		locked <- release
	}()
	for deadline := time.Now().Add(10 * time.Second); !wanted(sess); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a merge waiting for the lock is not seen")
		}
	}
	start()
	merge := <-locked
	if !wanted(sess) {
		t.Error("a merge holding the lock is not seen")
	}
	merge()
	elsewhere()
	if wanted(sess) || wanted(other) {
		t.Error("a merge that ended is still seen")
	}
}
