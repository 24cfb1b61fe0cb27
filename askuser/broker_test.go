package askuser

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestBrokerResolveOnce(t *testing.T) {
	b := NewBroker()
	ch := b.Open("ask-1", 0, nil)
	if got, want := b.Pending(), 1; got != want {
		t.Errorf("Pending() = %d, want %d", got, want)
	}
	want := Answer{Status: StatusAnswered, AnsweredBy: "ann", Replies: []Reply{{Selected: []string{"Blue"}}}}
	if err := b.Resolve("ask-1", want); err != nil {
		t.Fatalf("first Resolve: %v", err)
	}
	if diff := cmp.Diff(want, <-ch); diff != "" {
		t.Errorf("answer mismatch (-want +got):\n%s", diff)
	}
	err := b.Resolve("ask-1", Answer{Status: StatusAnswered, Replies: []Reply{{Text: "late"}}})
	if !errors.Is(err, ErrAlreadyResolved) {
		t.Errorf("second Resolve = %v, want ErrAlreadyResolved", err)
	}
	select {
	case a := <-ch:
		t.Errorf("second answer delivered: %+v", a)
	default:
	}
	if got := b.Pending(); got != 0 {
		t.Errorf("Pending() = %d after resolve, want 0", got)
	}
}

func TestBrokerResolveErrors(t *testing.T) {
	b := NewBroker()
	b.Open("open", time.Hour, func(string) {})
	if err := b.Resolve("open", Answer{Status: StatusCancelled, Reason: "run stopped"}); err != nil {
		t.Fatalf("Resolve(cancelled): %v", err)
	}
	tests := []struct {
		name string
		id   string
		want error
	}{
		{"never opened", "nope", ErrUnknownAsk},
		{"empty id", "", ErrUnknownAsk},
		{"cancelled then answered", "open", ErrAlreadyResolved},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := b.Resolve(tt.id, Answer{Status: StatusAnswered})
			if !errors.Is(got, tt.want) {
				t.Errorf("Resolve(%q) = %v, want %v", tt.id, got, tt.want)
			}
		})
	}
}

func TestBrokerOpenTwicePanics(t *testing.T) {
	b := NewBroker()
	b.Open("x", 0, nil)
	defer func() {
		if recover() == nil {
			t.Error("second Open of the same id did not panic")
		}
	}()
	b.Open("x", 0, nil)
}

func TestBrokerTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewBroker()
		timedOut := make(chan string, 2)
		onTimeout := func(id string) {
			timedOut <- id
			// As the run loop does: persist, then resolve.
			if err := b.Resolve(id, Answer{Status: StatusTimedOut}); err != nil {
				t.Errorf("Resolve from onTimeout: %v", err)
			}
		}
		ch := b.Open("slow", time.Minute, onTimeout)
		answered := b.Open("quick", time.Minute, onTimeout)

		time.Sleep(30 * time.Second)
		if err := b.Resolve("quick", Answer{Status: StatusAnswered, Replies: []Reply{{Text: "ok"}}}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if len(timedOut) != 0 {
			t.Fatalf("onTimeout called early for %v", <-timedOut)
		}
		start := time.Now()
		got := <-ch
		if elapsed := time.Since(start) + 30*time.Second; elapsed != time.Minute {
			t.Errorf("timed out after %v, want %v", elapsed, time.Minute)
		}
		if diff := cmp.Diff(Answer{Status: StatusTimedOut}, got); diff != "" {
			t.Errorf("answer mismatch (-want +got):\n%s", diff)
		}
		// The answered ask's timer was stopped: no timeout ever fires for it.
		time.Sleep(time.Hour)
		synctest.Wait()
		close(timedOut)
		var gotIDs []string
		for id := range timedOut {
			gotIDs = append(gotIDs, id)
		}
		if diff := cmp.Diff([]string{"slow"}, gotIDs); diff != "" {
			t.Errorf("onTimeout ids mismatch (-want +got):\n%s", diff)
		}
		if a := <-answered; a.Replies[0].Text != "ok" {
			t.Errorf("quick ask got %+v", a)
		}
	})
}

func TestBrokerTimeoutLosesToAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewBroker()
		resolveErr := make(chan error, 1)
		ch := b.Open("a", time.Minute, func(id string) {
			resolveErr <- b.Resolve(id, Answer{Status: StatusTimedOut})
		})
		// The person answers just as the timer fires; whoever comes second
		// gets ErrAlreadyResolved, and the channel holds the first outcome.
		time.Sleep(time.Minute)
		first := b.Resolve("a", Answer{Status: StatusAnswered, Replies: []Reply{{Text: "just in time"}}})
		synctest.Wait()
		var second error
		select {
		case second = <-resolveErr:
		default:
		}
		got := <-ch
		switch {
		case first == nil && (second == nil || errors.Is(second, ErrAlreadyResolved)) && got.Status == StatusAnswered:
		case errors.Is(first, ErrAlreadyResolved) && second == nil && got.Status == StatusTimedOut:
		default:
			t.Errorf("first=%v second=%v got=%+v: want exactly one delivered outcome", first, second, got)
		}
	})
}

type askerFunc func(ctx context.Context, q Form) (Answer, error)

func (f askerFunc) Ask(ctx context.Context, q Form) (Answer, error) { return f(ctx, q) }

func TestBrokerRegister(t *testing.T) {
	b := NewBroker()
	a := askerFunc(func(context.Context, Form) (Answer, error) { return Answer{}, nil })
	unregister := b.Register("tok", a)
	if _, ok := b.asker("tok"); !ok {
		t.Fatal("registered token not found")
	}
	if _, ok := b.asker(""); ok {
		t.Error("empty token found")
	}
	unregister()
	unregister() // idempotent
	if _, ok := b.asker("tok"); ok {
		t.Error("token still found after unregister")
	}
	// A stale unregister must not remove a newer registration of the token.
	stale := b.Register("tok", a)
	b.Register("tok", a)
	stale()
	if _, ok := b.asker("tok"); !ok {
		t.Error("a stale unregister removed the newer registration")
	}
}
