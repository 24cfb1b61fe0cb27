package runner

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"

	"parley/askuser"
)

// TestNotQueuedWorkIsNotKept: work that tries to join the session's earlier
// work in the queue (withRun's retry after errQueued) and finds none is
// sent by the caller with item 0, so the copy enqueue saved must not stay
// in the kept queue: a replay after a restart, or another replica's claim,
// would send it a second time.
func TestNotQueuedWorkIsNotKept(t *testing.T) {
	queue := &memQueue{items: map[int64]QueuedWork{}}
	sup := NewSupervisor(context.Background(), Deps{Journal: pendingJournal{&memJournal{}}, Publisher: make(chanPublisher, 16),
		Broker: askuser.NewBroker(), Log: slog.New(slog.NewTextHandler(io.Discard, nil)), RuntimeDir: t.TempDir(),
		MaxRuns: 1, QueueStore: queue})
	t.Cleanup(sup.Shutdown)
	w := &QueuedWork{Text: "hello", By: "Ann"}
	j := job{work: w, do: func(context.Context, *Run, int64) error { return nil }}
	if err := sup.enqueue(t.Context(), "s1", nil, j, true); !errors.Is(err, errNotQueued) {
		t.Fatalf("behind with nothing in line: %v, want errNotQueued", err)
	}
	if k := queue.kept(); len(k) != 0 {
		t.Fatalf("kept %v after errNotQueued, want nothing: the caller sends the work with item %d", k, queuedItem(w))
	}
}
