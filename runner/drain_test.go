package runner

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/google/go-cmp/cmp"

	"parley/askuser"
)

// pendingJournal finds every ask pending, so an answer to it may wait in
// line.
type pendingJournal struct{ *memJournal }

func (pendingJournal) LoadInput(_ context.Context, id string) (Input, error) {
	return Input{ID: id, SessionID: "s1", Kind: KindQuestion, Status: "pending"}, nil
}

// TestDrainHandsOverQueuedWorkInOrder: prompts and answers that waited in
// line for the only slot are handed over by a drain, each session with its
// own work in the order it was given, and none of it ran here.
func TestDrainHandsOverQueuedWorkInOrder(t *testing.T) {
	sup := NewSupervisor(context.Background(), Deps{Journal: pendingJournal{&memJournal{}}, Publisher: make(chanPublisher, 16),
		Broker: askuser.NewBroker(), Log: slog.New(slog.NewTextHandler(io.Discard, nil)), RuntimeDir: t.TempDir(), MaxRuns: 1})
	t.Cleanup(sup.Shutdown)
	if !sup.slots.tryAcquire() { // the only slot is busy elsewhere
		t.Fatal("no free slot")
	}
	start := func(context.Context) (Options, error) {
		t.Error("a process was started for work waiting in line")
		return Options{}, context.Canceled
	}
	ctx := t.Context()
	blue := Response{By: "Bob", ByID: 2, Replies: []askuser.Reply{{Selected: []string{"Blue"}}}}
	steps := []func() error{
		func() error { return sup.Prompt(ctx, "s1", start, "first", "Ann") },
		func() error { return sup.Answer(ctx, "s1", start, "in-1", blue) },
		func() error { return sup.Prompt(ctx, "s2", start, "other session", "Cy") },
		func() error { return sup.Prompt(ctx, "s1", start, "third", "Ann") },
		func() error {
			return sup.Answer(ctx, "s1", start, "in-2", Response{By: "Ann", Decline: true, Reason: "no"})
		},
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	if got := sup.Queued(); got != 2 {
		t.Fatalf("%d sessions in line, want 2", got)
	}
	got := sup.Drain(ctx, 0)
	want := []Handover{
		{SessionID: "s1", Work: []QueuedWork{{Text: "first", By: "Ann"}, {InputID: "in-1", Resp: blue},
			{Text: "third", By: "Ann"}, {InputID: "in-2", Resp: Response{By: "Ann", Decline: true, Reason: "no"}}}},
		{SessionID: "s2", Work: []QueuedWork{{Text: "other session", By: "Cy"}}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("handed over (-want +got):\n%s", diff)
	}
	if !got[0].Work[1].IsAnswer() || got[0].Work[0].IsAnswer() {
		t.Error("IsAnswer does not tell answers from prompts")
	}
	if sup.Queued() != 0 {
		t.Errorf("%d sessions still in line after the drain", sup.Queued())
	}
}
