package limit

import (
	"context"
	"errors"
	"time"
)

// ErrBusy says the pool had no free worker within its wait.
var ErrBusy = errors.New("too many requests are being checked at once")

// Pool bounds how many expensive operations (bcrypt comparisons of sign-ins
// nobody has proven yet) run at once, so a flood of them queues instead of
// taking every CPU; a caller that waits longer than wait gives up.
type Pool struct {
	slots chan struct{}
	wait  time.Duration
}

// NewPool returns a Pool of n workers whose callers wait at most wait.
func NewPool(n int, wait time.Duration) *Pool {
	return &Pool{slots: make(chan struct{}, max(n, 1)), wait: wait}
}

// Do runs f when a worker is free, or returns ErrBusy after the wait (or
// ctx's error).
func (p *Pool) Do(ctx context.Context, f func()) error {
	t := time.NewTimer(p.wait)
	defer t.Stop()
	select {
	case p.slots <- struct{}{}:
	case <-t.C:
		return ErrBusy
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-p.slots }()
	f()
	return nil
}
