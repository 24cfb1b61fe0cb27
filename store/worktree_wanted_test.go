package store_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"parley/store"
	"parley/store/pgtest"
)

// WorktreeWanted sees a merge that waits for the session's worktree lock
// (and one that holds it), and nothing for run starts sharing it or for
// another session's merge; for keys of either sign (pg_locks splits the
// 64-bit key into two unsigned halves).
func TestWorktreeWanted(t *testing.T) {
	url := pgtest.New(t)
	s, err := store.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	withBranch := func() (id string, negative bool) {
		id = newSession(t, s).ID
		if err := s.SetSessionWorktree(t.Context(), store.SessionWorktree{SessionID: id, Branch: "parley/" + id, Base: "main", State: store.WorktreeActive}); err != nil {
			t.Fatal(err)
		}
		if err := conn.QueryRow(t.Context(), `SELECT hashtext('parley.worktree.' || $1) < 0`, id).Scan(&negative); err != nil {
			t.Fatal(err)
		}
		return id, negative
	}
	signs := map[bool]string{}
	for i := 0; len(signs) < 2 && i < 64; i++ {
		id, negative := withBranch()
		signs[negative] = id
	}
	if len(signs) < 2 {
		t.Fatal("no session ids whose keys have both signs")
	}
	for negative, sess := range signs {
		t.Run(map[bool]string{true: "negative key", false: "positive key"}[negative], func(t *testing.T) {
			wantedSeen(t, s, sess, signs[!negative])
		})
	}
}

// wantedSeen checks WorktreeWanted on sess, with other's merge beside it.
// Every lock is released when it returns (releases are once), so a
// failure leaves no merge waiting.
func wantedSeen(t *testing.T, s *store.Store, sess, other string) {
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
	defer start()
	if wanted(sess) {
		t.Fatal("a run start's shared lock reads as a merge")
	}
	elsewhere, err := s.LockWorktree(t.Context(), other)
	if err != nil {
		t.Fatal(err)
	}
	defer elsewhere()
	if wanted(sess) {
		t.Fatal("another session's merge reads as this one's")
	}
	locked := make(chan func(), 1)
	go func() {
		release, err := s.LockWorktree(t.Context(), sess)
		if err != nil {
			release = func() {}
		}
		locked <- release
	}()
	defer func() { start(); (<-locked)() }() // start's lock freed first: the merge gets its lock, then frees it
	for deadline := time.Now().Add(10 * time.Second); !wanted(sess); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a merge waiting for the lock is not seen")
		}
	}
	start()
	merge := <-locked
	locked <- merge
	if !wanted(sess) {
		t.Error("a merge holding the lock is not seen")
	}
	merge()
	elsewhere()
	if wanted(sess) || wanted(other) {
		t.Error("a merge that ended is still seen")
	}
}
