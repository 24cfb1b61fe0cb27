package runner

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// A start ahead gives way to a merge.
//
// A resume ahead holds its session's StartGuard from its Starter until its
// run is recorded open, the prime (about a second) included. A member who
// merges or discards the session's worktree meanwhile would wait for it
// and then be refused, as if a message's turn had begun. Nobody waits on a
// start ahead, so it gives way instead: while it primes it asks, every
// yieldPoll and once more when the prime is done, whether a merge waits
// for the guard (SetAheadYield), and if so ends its process and starts
// nothing. A message that came meanwhile and waited for the start then
// starts its own run, which waits in the queue for the merge. A message's
// own start does not prime, never gives way, and the merge is refused.

// errGaveWay says a start ahead ended because a merge or discard of its
// session's worktree waited for it.
var errGaveWay = errors.New("the start ahead gave way to a merge of the session's worktree")

// yieldPoll is how often a priming start ahead asks whether to give way.
const yieldPoll = 50 * time.Millisecond

// yieldAsk bounds one such question.
const yieldAsk = 2 * time.Second

// SetAheadYield has each start ahead of a message give way while yield
// says a merge or discard waits for the session's StartGuard (on any
// replica). yield answers false when it cannot tell. Set it before starts
// begin; nil = starts ahead never give way.
func (s *Supervisor) SetAheadYield(yield func(ctx context.Context, sessionID string) bool) {
	s.aheadYield = yield
}

// giveWay watches, while the session's start primes, whether it should
// give way, and closes yielded (which ends the prime) when it should. done
// stops the watch and reports whether the start gives way, asking once
// more if the watch had not said so and the start was not stopped: a merge
// that asked in the last poll's interval does not wait for a run that will
// be recorded.
func (s *Supervisor) giveWay(ctx context.Context, sessionID string, yielded chan struct{}) (done func() bool) {
	yield := s.aheadYield
	if yield == nil {
		return func() bool { return false }
	}
	ask := func(ctx context.Context) bool {
		actx, cancel := context.WithTimeout(ctx, yieldAsk)
		defer cancel()
		return yield(actx, sessionID)
	}
	var gave atomic.Bool
	wctx, cancel := context.WithCancel(ctx)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(yieldPoll)
		defer t.Stop()
		for {
			if ask(wctx) {
				gave.Store(true)
				close(yielded)
				return
			}
			select {
			case <-wctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() bool {
		cancel()
		<-finished
		if gave.Load() {
			return true
		}
		return s.window.check(sessionID) == nil && ask(ctx)
	}
}
