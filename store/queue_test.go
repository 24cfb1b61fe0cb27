package store_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"parley/store"
	"parley/store/pgtest"
)

// TestQueueOutlivesItsReplica: what waits in the queue on A is A's while A
// lives; once A lapses (or hands its sessions over) B claims it, in
// order, except a prompt the log shows Claude already had, and claims
// nothing twice.
func TestQueueOutlivesItsReplica(t *testing.T) {
	url := pgtest.New(t)
	open := func() *store.Store {
		s, err := store.Open(t.Context(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		if _, err := s.Heartbeat(t.Context(), "/data", time.Minute); err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b := open(), open()
	s1, s2 := newSession(t, a), newSession(t, a)
	keep := func(it store.QueueItem) int64 {
		id, err := a.KeepQueued(t.Context(), it)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	first := keep(store.QueueItem{SessionID: s1.ID, Kind: store.QueuePrompt, Text: "first", By: "Ann"})
	answer := keep(store.QueueItem{SessionID: s1.ID, Kind: store.QueueAnswer, InputID: "in-1",
		Response: json.RawMessage(`{"by":"Ann","choice":"Blue"}`)})
	had := keep(store.QueueItem{SessionID: s1.ID, Kind: store.QueuePrompt, Text: "had", By: "Bob"})
	last := keep(store.QueueItem{SessionID: s1.ID, Kind: store.QueuePrompt, Text: "last", By: "Bob"})
	gone := keep(store.QueueItem{SessionID: s2.ID, Kind: store.QueuePrompt, Text: "sent", By: "Ann"})
	if ours, err := a.LeftQueue(t.Context(), gone); err != nil || !ours {
		t.Fatalf("A removes its own item: %v, %v", ours, err)
	}
	// A crash came between "had" reaching Claude and its item leaving.
	p, _ := json.Marshal(map[string]any{"text": "had", "by": "Bob", "line": had})
	if err := a.AppendEvent(t.Context(), store.Event{SessionID: s1.ID, Seq: 1, Type: "prompt", Payload: p}); err != nil {
		t.Fatal(err)
	}

	if ids, err := b.SessionsWithOrphanedQueue(t.Context()); err != nil || len(ids) != 0 {
		t.Fatalf("orphaned lines while A lives: %v, %v; want none", ids, err)
	}
	if items, err := b.ClaimQueue(t.Context(), s1.ID); err != nil || len(items) != 0 {
		t.Fatalf("B claims A's live line: %v, %v; want nothing", items, err)
	}
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	if _, err := conn.Exec(t.Context(), `UPDATE replicas SET expires_at = now() - interval '1 second' WHERE id = $1`, a.Replica()); err != nil {
		t.Fatal(err)
	}
	if ids, err := b.SessionsWithOrphanedQueue(t.Context()); err != nil || len(ids) != 1 || ids[0] != s1.ID {
		t.Fatalf("orphaned lines once A lapsed: %v, %v; want s1's", ids, err)
	}
	items, err := b.ClaimQueue(t.Context(), s1.ID)
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, it := range items {
		got = append(got, it.ID)
	}
	if len(got) != 3 || got[0] != first || got[1] != answer || got[2] != last {
		t.Fatalf("B claims %v, want %v (without %d, which Claude had)", got, []int64{first, answer, last}, had)
	}
	if it := items[1]; it.Kind != store.QueueAnswer || it.InputID != "in-1" || string(it.Response) != `{"by": "Ann", "choice": "Blue"}` {
		t.Errorf("the answer came back as %+v", it)
	}
	if it := items[0]; it.Kind != store.QueuePrompt || it.Text != "first" || it.By != "Ann" || it.SessionID != s1.ID {
		t.Errorf("the first prompt came back as %+v", it)
	}
	if again, err := b.ClaimQueue(t.Context(), s1.ID); err != nil || len(again) != 0 {
		t.Fatalf("a second claim: %v, %v; want nothing: B serves them now", again, err)
	}
	if ids, err := b.SessionsWithOrphanedQueue(t.Context()); err != nil || len(ids) != 0 {
		t.Fatalf("orphaned lines after B's claim: %v, %v; want none", ids, err)
	}
	left, err := b.QueueOf(t.Context(), s1.ID)
	if err != nil || len(left) != 3 {
		t.Fatalf("s1's line %v, %v; want the 3 claimed", left, err)
	}
	// A, back from a pause, may not remove what B serves now.
	if ours, err := a.LeftQueue(t.Context(), first); err != nil || ours {
		t.Fatalf("A removes B's item: ours %v, %v; want refused", ours, err)
	}
	// B could not send the last one now: it is anyone's again.
	if err := b.ReleaseQueued(t.Context(), last); err != nil {
		t.Fatal(err)
	}
	if has, err := b.HasOrphanedQueue(t.Context(), s1.ID); err != nil || !has {
		t.Fatalf("after B released an item: orphaned %v, %v; want true", has, err)
	}
	if again, err := b.ClaimQueue(t.Context(), s1.ID); err != nil || len(again) != 1 || again[0].ID != last {
		t.Fatalf("claim after the release: %v, %v; want the released item", again, err)
	}

	// B hands s1 over: its items are anyone's at once.
	if owner, err := b.AcquireLease(t.Context(), s1.ID); err != nil || owner != b.Replica() {
		t.Fatalf("B acquires: %q, %v", owner, err)
	}
	if err := b.HandOver(t.Context(), []string{s1.ID}); err != nil {
		t.Fatal(err)
	}
	if ids, err := b.SessionsWithOrphanedQueue(t.Context()); err != nil || len(ids) != 1 {
		t.Fatalf("orphaned lines after B handed s1 over: %v, %v; want s1's", ids, err)
	}
}
