package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"parley/askuser"
)

// memQueue is a QueueStore in memory; fail makes Keep fail.
type memQueue struct {
	mu       sync.Mutex
	next     int64
	items    map[int64]QueuedWork
	released []int64
	fail     error
}

func (l *memQueue) Keep(_ context.Context, _ string, w QueuedWork) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fail != nil {
		return 0, l.fail
	}
	l.next++
	l.items[l.next] = w
	return l.next, nil
}

func (l *memQueue) Left(_ context.Context, id int64) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ours := l.items[id]
	delete(l.items, id)
	return ours, nil
}

func (l *memQueue) Release(_ context.Context, id int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.released = append(l.released, id)
	return nil
}

func (l *memQueue) Serves(_ context.Context, id int64) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ours := l.items[id]
	return ours, nil
}

func (l *memQueue) kept() []int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Sorted(maps.Keys(l.items))
}

// TestQueueKeepsWhatWaits: prompts and answers that wait in the queue for the
// only slot are kept; a drain hands them over with their kept items (which
// stay, for whoever takes the session); work whose process could not start
// leaves the queue (the page says so), unless only for now (the database
// away): then it is released for a later try; and work that cannot be kept
// is refused with a clear error, never taken in silently.
func TestQueueKeepsWhatWaits(t *testing.T) {
	queue := &memQueue{items: map[int64]QueuedWork{}}
	newSup := func() *Supervisor {
		sup := NewSupervisor(context.Background(), Deps{Journal: pendingJournal{&memJournal{}}, Publisher: make(chanPublisher, 16),
			Broker: askuser.NewBroker(), Log: slog.New(slog.NewTextHandler(io.Discard, nil)), RuntimeDir: t.TempDir(),
			MaxRuns: 1, QueueStore: queue})
		t.Cleanup(sup.Shutdown)
		if !sup.slots.tryAcquire() { // the only slot is busy elsewhere
			t.Fatal("no free slot")
		}
		return sup
	}
	ctx := t.Context()
	cannot := errors.New("no claude here")
	fails := func(context.Context) (Options, error) { return Options{}, cannot }
	blue := Response{By: "Bob", Replies: []askuser.Reply{{Selected: []string{"Blue"}}}}

	sup := newSup()
	if err := sup.Prompt(ctx, "s1", fails, "first", Author{Name: "Ann"}); err != nil {
		t.Fatal(err)
	}
	if err := sup.Answer(ctx, "s1", fails, "in-1", blue); err != nil {
		t.Fatal(err)
	}
	if got := queue.kept(); len(got) != 2 || queue.items[1].Text != "first" || queue.items[2].InputID != "in-1" {
		t.Fatalf("kept %v (%+v), want the prompt and the answer", got, queue.items)
	}
	sup.releaseSlot() // the slot goes to s1, whose process cannot start
	for deadline := time.Now().Add(10 * time.Second); len(queue.kept()) > 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("kept %v after the process failed to start, want nothing", queue.kept())
		}
	}

	sup = newSup()
	if err := sup.Prompt(ctx, "s2", fails, "second", Author{Name: "Cy"}); err != nil {
		t.Fatal(err)
	}
	got := sup.Drain(ctx, 0)
	if len(got) != 1 || len(got[0].Work) != 1 || got[0].Work[0].Item != 3 || got[0].Work[0].Text != "second" {
		t.Fatalf("handed over %+v, want s2's prompt as kept item 3", got)
	}
	if k := queue.kept(); len(k) != 1 || k[0] != 3 {
		t.Errorf("kept %v after the drain, want item 3 still: the next owner sends it", k)
	}

	sup = newSup()
	away := func(context.Context) (Options, error) {
		return Options{}, fmt.Errorf("%w: read the log", ErrUnavailable)
	}
	if err := sup.Prompt(ctx, "s4", away, "fourth", Author{Name: "Ed"}); err != nil {
		t.Fatal(err)
	}
	sup.releaseSlot()
	waitFor := func(what string, ok func() bool) {
		for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal(what)
			}
		}
	}
	waitFor("the item of a prompt whose process could not start for now was not released", func() bool {
		queue.mu.Lock()
		defer queue.mu.Unlock()
		return len(queue.released) == 1 && queue.released[0] == 4
	})
	if !slices.Contains(queue.kept(), 4) {
		t.Error("the released item was removed: it must stay for a later try")
	}

	sup = newSup()
	queue.fail = errors.New("database away")
	err := sup.Prompt(ctx, "s3", fails, "third", Author{Name: "Di"})
	if err == nil || !errors.Is(err, queue.fail) {
		t.Fatalf("a prompt that cannot be kept: %v, want the keeper's error", err)
	}
	if sup.Queued() != 0 {
		t.Errorf("%d sessions in line, want none: the prompt was refused", sup.Queued())
	}
}
