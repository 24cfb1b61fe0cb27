package askuser

import (
	"context"
	"strings"
	"sync"
	"testing"
)

// TestAskLimits: through a registered token, MaxOpenAsks asks may wait at
// once and the next is refused with a sentence; once they are answered,
// the rate still refuses a run that asked AsksPer times in a row.
func TestAskLimits(t *testing.T) {
	b := NewBroker()
	release := make(chan struct{})
	var started sync.WaitGroup
	b.Register("tok", askerFunc(func(ctx context.Context, _ Form) (Answer, error) {
		started.Done()
		<-release
		return Answer{}, nil
	}))
	reg, _ := b.registration("tok")
	var done sync.WaitGroup
	for range MaxOpenAsks {
		started.Add(1)
		done.Add(1)
		go func() { defer done.Done(); reg.asker.Ask(t.Context(), Form{}) }()
	}
	started.Wait()
	if _, err := reg.asker.Ask(t.Context(), Form{}); err == nil || !strings.Contains(err.Error(), "too many open questions") {
		t.Errorf("ask %d while %d wait: err %v, want too many open questions", MaxOpenAsks+1, MaxOpenAsks, err)
	}
	close(release)
	done.Wait()
	if _, err := reg.asker.Ask(t.Context(), Form{}); err == nil || !strings.Contains(err.Error(), "wait for the answers") {
		t.Errorf("ask %d in a row: err %v, want the rate's refusal", AsksPer+1, err)
	}
}

// TestAskLimitsRefundAnswered: asks a person answers do not count toward
// the rate: a run may ask many more than AsksPer in a row when each is
// answered.
func TestAskLimitsRefundAnswered(t *testing.T) {
	b := NewBroker()
	b.Register("tok", askerFunc(func(context.Context, Form) (Answer, error) { return Answer{Status: StatusAnswered}, nil }))
	reg, _ := b.registration("tok")
	for i := range 3 * AsksPer {
		if _, err := reg.asker.Ask(t.Context(), Form{}); err != nil {
			t.Fatalf("answered ask %d refused: %v", i+1, err)
		}
	}
}
