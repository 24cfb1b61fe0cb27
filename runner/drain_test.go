package runner

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"parley/askuser"
	"parley/runner/fakeapi"
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
		func() error { return sup.Prompt(ctx, "s1", start, "first", Author{Name: "Ann"}) },
		func() error { return sup.Answer(ctx, "s1", start, "in-1", blue) },
		func() error { return sup.Prompt(ctx, "s2", start, "other session", Author{Name: "Cy"}) },
		func() error { return sup.Prompt(ctx, "s1", start, "third", Author{Name: "Ann"}) },
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
	// The drain took the queue: nothing joins it any more, even past the
	// supervisor's own check.
	if _, _, err := sup.slots.enqueue("s3", start, nil, nil, false); !errors.Is(err, ErrDraining) {
		t.Errorf("joining the line after the drain: %v, want ErrDraining", err)
	}
}

// A slot that comes free just before a drain loses nothing. The session
// given it starts its process, and its queued prompt is handed to it only
// once the drain has begun (here the job waits for the drain to end, or
// for 300 ms). The drain waits for it: the session is handed over with
// its turn in flight. Before, the drain ended the new run first, and the
// prompt failed with ErrDraining and was lost. And when the new run ends
// on its own meanwhile, the prompt and what waited behind it are handed
// over as work.
func TestDrainWaitsForASessionGivenASlot(t *testing.T) {
	never := make(chan struct{})
	fake := fakeapi.Serve(t, fakeapi.Scenario{{Text: "still thinking", Hold: never}})
	for _, runEnds := range []bool{false, true} {
		sup, j, _ := newTestSupervisor(t, fakeapi.ClaudeBin(t), fake.Env(t.TempDir()))
		sup.slots.max = 1
		if !sup.slots.tryAcquire() { // the only slot is busy elsewhere
			t.Fatal("no free slot")
		}
		ctx := t.Context()
		o := testOptions(t, "")
		drained := make(chan []Handover, 1)
		drainDone := make(chan struct{})
		prompt := func(jctx context.Context, r *Run, _ int64) error {
			go func() { drained <- sup.Drain(ctx, 0); close(drainDone) }() // ctx: the drain outlives the job
			select {
			case <-drainDone:
			case <-time.After(300 * time.Millisecond):
			}
			if runEnds {
				r.Stop()
			}
			reply := make(chan error, 1)
			return r.send(jctx, turnCmd{text: "hello", by: Author{Name: "Ann"}, reply: reply}, reply)
		}
		if err := sup.enqueue(ctx, "s1", With(o), job{work: &QueuedWork{Text: "hello", By: "Ann"}, do: prompt}, false); err != nil {
			t.Fatal(err)
		}
		if err := sup.Prompt(ctx, "s1", With(o), "and then", Author{Name: "Ann"}); err != nil {
			t.Fatal(err)
		}
		sup.releaseSlot() // the slot goes to s1: its process starts
		var got []Handover
		select {
		case got = <-drained:
		case <-time.After(2 * time.Minute):
			t.Fatal("the drain did not end")
		}
		if len(got) != 1 || got[0].SessionID != "s1" {
			t.Fatalf("run ends=%v: handed over %+v, want s1", runEnds, got)
		}
		switch work := got[0].Work; {
		case runEnds && (len(work) != 2 || work[0].Text != "hello" || work[1].Text != "and then"):
			t.Fatalf("its run ended: handed over work %+v, want both prompts, in order", work)
		case !runEnds && (len(work) != 1 || !goesOnWith(work[0].Text) || !j.has(TypePrompt, "hello") || !j.has(TypePrompt, "and then")):
			// The drain (no grace) cut the turn off: the new owner is to
			// have Claude go on, with the prompts the CLI had not read.
			t.Fatalf("handed over work %+v, want only the prompt that goes on: both prompts given to its process", work)
		}
	}
}

// goesOnWith says whether a prompt that goes on after a drain carries
// what the CLI had not read when the drain cut "hello" off with "and then"
// queued behind: either it had begun "hello", or it had read neither.
func goesOnWith(text string) bool {
	return strings.HasPrefix(text, goOnText) && strings.HasSuffix(text, "never reached you:\n\nFrom Ann:\nand then") ||
		text == unreadText+"\n\nFrom Ann:\nhello\n\nFrom Ann:\nand then"
}

// A queued prompt whose new run ended before it got there, and which then
// found every slot taken, waits in the queue again as what it is: a drain
// hands it over as work. Before, it waited in the queue unnamed and a drain
// handed the session over without it.
func TestQueuedWorkBackInQueueIsHandedOver(t *testing.T) {
	fake := fakeapi.Serve(t, fakeapi.Scenario{{Text: "unused"}})
	sup, _, _ := newTestSupervisor(t, fakeapi.ClaudeBin(t), fake.Env(t.TempDir()))
	sup.slots.max = 1
	if !sup.slots.tryAcquire() {
		t.Fatal("no free slot")
	}
	ctx := t.Context()
	o := testOptions(t, "")
	tried := make(chan struct{})
	prompt := func(ctx context.Context, r *Run, _ int64) error {
		select {
		case <-tried:
			t.Error("the prompt ran again: it should wait in line")
			return nil
		default:
			close(tried)
		}
		// Its run ends, and its slot goes to another session.
		r.Stop()
		if !sup.slots.tryAcquire() {
			t.Error("the ended run's slot is not free")
		}
		reply := make(chan error, 1)
		return r.send(ctx, turnCmd{text: "hello", by: Author{Name: "Ann"}, reply: reply}, reply)
	}
	if err := sup.enqueue(ctx, "s1", With(o), job{work: &QueuedWork{Text: "hello", By: "Ann"}, do: prompt}, false); err != nil {
		t.Fatal(err)
	}
	sup.releaseSlot()
	<-tried
	deadline := time.Now().Add(time.Minute)
	for sup.Queued() == 0 { // back in the queue
		if time.Now().After(deadline) {
			t.Fatal("the prompt did not go back in line")
		}
		time.Sleep(time.Millisecond)
	}
	got := sup.Drain(ctx, 0)
	if len(got) != 1 || got[0].SessionID != "s1" || len(got[0].Work) != 1 || got[0].Work[0].Text != "hello" {
		t.Fatalf("handed over %+v, want s1 with its prompt", got)
	}
}

// has says the journal holds an event of type typ whose payload holds s.
func (j *memJournal) has(typ, s string) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, e := range j.events {
		if e.Type == typ && strings.Contains(string(e.Payload), s) {
			return true
		}
	}
	return false
}

// TestGoOnWithTurnsADrainCut: what a drain cuts off (cutOff) and the prompt
// it hands over to go on with it (goOn): a running turn the CLI began goes
// on, for its author, unless it was being stopped or an owed answer goes
// on with it; turns the CLI never read (queued, or not yet begun) are
// carried with their authors, except a barred member's; a turn that waits
// for asks goes on with their answers.
func TestGoOnWithTurnsADrainCut(t *testing.T) {
	ann, bob := Author{Name: "Ann", ID: 1}, Author{Name: "Bob", ID: 2}
	turns := []turnAuthor{{Author: ann, n: 1, text: "build it"}, {Author: bob, n: 2, text: "and the tests"},
		{Author: ann, n: 3, text: "and docs"}}
	goOnQueued := goOnText + " These messages sent to you meanwhile never reached you:" +
		"\n\nFrom Bob:\nand the tests\n\nFrom Ann:\nand docs"
	for _, tc := range []struct {
		name string
		run  *Run
		a    int32
		want QueuedWork
		ok   bool
	}{
		{"nothing written", &Run{}, activityWorking, QueuedWork{}, false},
		{"working", &Run{authors: authors{inFlight: turns[:1], begun: 1}}, activityWorking,
			QueuedWork{Text: goOnText, By: "Ann", ByID: 1, Parley: true}, true},
		{"working, with queued turns", &Run{authors: authors{inFlight: turns, begun: 1}}, activityWorking,
			QueuedWork{Text: goOnQueued, By: "Ann", ByID: 1, Parley: true}, true},
		{"not begun", &Run{authors: authors{inFlight: turns[:2]}}, activityWorking,
			QueuedWork{Text: unreadText + "\n\nFrom Ann:\nbuild it\n\nFrom Bob:\nand the tests", By: "Ann", ByID: 1, Parley: true}, true},
		{"being stopped", &Run{authors: authors{inFlight: turns[:1], begun: 1, interrupted: 1}}, activityWorking,
			QueuedWork{}, false},
		{"being stopped, with a queued turn", &Run{authors: authors{inFlight: turns[:2], begun: 1, interrupted: 1}},
			activityWorking, QueuedWork{Text: unreadText + "\n\nFrom Bob:\nand the tests", By: "Bob", ByID: 2, Parley: true}, true},
		{"an answer owed", &Run{authors: authors{inFlight: turns[:1], begun: 1},
			deliveries: deliveries{awaiting: map[string]handedOver{"toolu_1": {}}}}, activityWorking, QueuedWork{}, false},
		{"a barred member's queued turn", &Run{authors: authors{inFlight: turns[:2], begun: 1, barred: map[int64]string{2: "Bob"}}},
			activityWorking, QueuedWork{Text: goOnText, By: "Ann", ByID: 1, Parley: true}, true},
		{"asking", &Run{authors: authors{inFlight: turns[:1], begun: 1}}, activityAsking, QueuedWork{}, false},
		{"asking, with a queued turn", &Run{authors: authors{inFlight: turns[:2], begun: 1}}, activityAsking,
			QueuedWork{Text: unreadText + "\n\nFrom Bob:\nand the tests", By: "Bob", ByID: 2, Parley: true}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := goOn(tc.run.cutOff(tc.a))
			if ok != tc.ok {
				t.Fatalf("goOn says %v, want %v", ok, tc.ok)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("goOn (-want +got):\n%s", diff)
			}
		})
	}
}

// TestGoOnAfterCrash: the prompt for what a crash cut off goes on with a
// begun turn nobody was stopping, carries the turns the CLI never read,
// and never goes on with a turn that was itself Parley's go-on (a turn
// that takes its replica down is not run over and over).
func TestGoOnAfterCrash(t *testing.T) {
	ann, bob := Author{Name: "Ann", ID: 1}, Author{Name: "Bob", ID: 2}
	build, tests := CutTurn{Text: "build it", By: ann}, CutTurn{Text: "and the tests", By: bob}
	again := CutTurn{Text: goOnText, By: ann, Parley: true}
	// A member's message that reads like Parley's is a member's.
	likeParley := CutTurn{Text: goOnText, By: ann}
	for _, tc := range []struct {
		name           string
		turns          []CutTurn
		begun, stopped bool
		want           QueuedWork
		ok             bool
	}{
		{"nothing", nil, true, false, QueuedWork{}, false},
		{"running", []CutTurn{build}, true, false, QueuedWork{Text: goOnText, By: "Ann", ByID: 1, Parley: true}, true},
		{"running, with a queued turn", []CutTurn{build, tests}, true, false,
			QueuedWork{Text: goOnText + " These messages sent to you meanwhile never reached you:\n\nFrom Bob:\nand the tests", By: "Ann", ByID: 1, Parley: true}, true},
		{"not begun", []CutTurn{build}, false, false, QueuedWork{Text: unreadText + "\n\nFrom Ann:\nbuild it", By: "Ann", ByID: 1, Parley: true}, true},
		{"stopped", []CutTurn{build}, true, true, QueuedWork{}, false},
		{"a go-on cut again", []CutTurn{again}, true, false, QueuedWork{}, false},
		{"a member's turn that reads like Parley's", []CutTurn{likeParley}, true, false, QueuedWork{Text: goOnText, By: "Ann", ByID: 1, Parley: true}, true},
		{"a go-on cut again, with a queued turn", []CutTurn{again, tests}, true, false,
			QueuedWork{Text: unreadText + "\n\nFrom Bob:\nand the tests", By: "Bob", ByID: 2, Parley: true}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := GoOnAfterCrash(tc.turns, tc.begun, tc.stopped)
			if ok != tc.ok {
				t.Fatalf("GoOnAfterCrash says %v, want %v", ok, tc.ok)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("GoOnAfterCrash (-want +got):\n%s", diff)
			}
		})
	}
}
