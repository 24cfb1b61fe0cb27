package runstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"parley/runner"
	"parley/store"
)

// Expirer ends detached asks (their process gone) that nobody answered
// within their project's expiry time, with status expired. It does not
// poll: it sweeps once at start, then sleeps on one timer set for the next
// expiry, and sweeps again when the timer fires or when [Expirer.Kick]
// says that something changed (a run ended and left asks behind, or a
// project's expiry setting changed).
type Expirer struct {
	st   *store.Store
	log  *slog.Logger
	kick chan struct{}
	// Now is the Expirer's clock (time.Now); a test moves it forward.
	Now func() time.Time
}

// NewExpirer returns an Expirer; run it with [Expirer.Run].
func NewExpirer(st *store.Store, log *slog.Logger) *Expirer {
	return &Expirer{st: st, log: log, kick: make(chan struct{}, 1), Now: time.Now}
}

// Kick asks for a sweep soon. It never blocks and is safe on a nil Expirer.
func (x *Expirer) Kick() {
	if x == nil {
		return
	}
	select {
	case x.kick <- struct{}{}:
	default: // a sweep is already due
	}
}

// retryAfterError is when a sweep that failed (the database is away) is
// tried again.
const retryAfterError = time.Minute

// Run sweeps until ctx ends, expiring through sup so that a session's live
// run stays the single writer of its log.
func (x *Expirer) Run(ctx context.Context, sup *runner.Supervisor) error {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		case <-x.kick:
		}
		next, err := x.Sweep(ctx, sup)
		wait := retryAfterError
		switch {
		case err != nil:
			x.log.Error("expire asks", "err", err)
		case next == nil:
			wait = -1
		default:
			wait = max(next.Sub(x.Now()), 0)
		}
		timer.Stop()
		if wait >= 0 {
			timer.Reset(wait)
		}
	}
}

// Sweep expires every detached ask whose time has passed and returns when
// the next one is due (nil if none is waiting).
func (x *Expirer) Sweep(ctx context.Context, sup *runner.Supervisor) (*time.Time, error) {
	due, next, err := x.st.ExpiredInputs(ctx, x.Now())
	if err != nil {
		return nil, err
	}
	for _, in := range due {
		// With several replicas, the session's owner expires its asks (its
		// live run, if any, is the single writer of the log); a session
		// nobody owns is taken here first, so no other replica starts a
		// run of it meanwhile.
		owner, err := x.st.AcquireLease(ctx, in.SessionID)
		if err != nil {
			return nil, err
		}
		if owner != x.st.Replica() {
			continue
		}
		reason := fmt.Sprintf("nobody answered within %d days", in.Days)
		err = sup.Expire(ctx, in.ProjectID, in.SessionID, in.ID, reason)
		switch {
		case errors.Is(err, runner.ErrNotPending), errors.Is(err, runner.ErrNotFound):
			continue // answered meanwhile, or its process waits for it again
		case err != nil:
			return nil, fmt.Errorf("expire ask %s: %w", in.ID, err)
		}
		if _, live := sup.Live(in.SessionID); !live {
			if err := x.st.SettleWaiting(ctx, in.SessionID); err != nil {
				return nil, err
			}
		}
	}
	return next, nil
}
