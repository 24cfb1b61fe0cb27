package runner

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// When Postgres cannot take a write (it is stopped, restarting or out of
// reach) the run loop does not drop the write: it waits and tries again,
// with a capped backoff, until the database is back. While it waits it
// reads nothing more from the CLI: the loop's line channel fills, then the
// stdout pipe, and the CLI blocks on its next write (backpressure), so no
// output is lost and none piles up in memory. A write Postgres *refuses*
// (a data error, such as a \u0000 in a string) is not retried; the caller
// keeps what it can as today.

const (
	retryFirst = 50 * time.Millisecond
	retryMax   = 2 * time.Second
	// stopGrace is how long a run that is being stopped (shutdown, Stop,
	// idle end) keeps trying to write what it holds before it gives up:
	// a stop must end, even with the database away.
	stopGrace = 10 * time.Second
)

// ErrUnavailable marks a Journal error that means the database could not
// take the operation now (it is down, restarting, unreachable, or did not
// answer in time); the same operation may succeed later. A Journal wraps
// such errors with it (fmt.Errorf("%w: %w", ErrUnavailable, err)); any
// other error is a refusal.
var ErrUnavailable = errors.New("the database is unavailable")

// unavailable reports whether err is worth retrying. A write that timed out
// is: the database may be away, and whether the write committed is found out
// before it is tried again.
func unavailable(err error) bool {
	return errors.Is(err, ErrUnavailable) || errors.Is(err, context.DeadlineExceeded)
}

// DatabaseObserver is told when a run starts waiting for the database and
// when its writes succeed again. The notice cannot be stored (the database
// is down), so it goes only to whoever watches this replica's runs. A
// Publisher may implement it.
type DatabaseObserver interface {
	DatabaseWaiting(sessionID string, waiting bool)
}

// dbWait is the run loop's state while it retries writes.
type dbWait struct {
	runCtx   context.Context // the run's own context: done when it is being stopped
	since    time.Time       // when the current wait began; zero = not waiting
	retries  int             // writes retried in the current wait
	giveUpAt time.Time       // set once the run is stopped: writes give up after it
}

// committedFunc says whether a write that failed ambiguously took effect.
type committedFunc func(ctx context.Context) (bool, error)

// leaseWait is how often a write waiting for the replica's lease looks again.
const leaseWait = 50 * time.Millisecond

// persist performs write until it succeeds or fails for a reason other than
// the database being unavailable. committed, if not nil, is asked before
// each retry whether the failed attempt committed after all (its reply may
// be what was lost); nil means the write is safe to repeat. Once the run is
// being stopped it gives up after stopGrace with an error wrapping
// ErrUnavailable.
func (r *Run) persist(ctx context.Context, write func(context.Context) error, committed committedFunc) error {
	wait := retryFirst
	for {
		if r.fenced.Load() {
			return errFenced
		}
		if r.leaseHeld != nil && !r.leaseHeld() {
			// This replica may have lost its lease (a long pause): its
			// sessions may be another's now. Wait for the heartbeat to
			// renew it, or to fence the run.
			if !r.pause(ctx, leaseWait) {
				if r.fenced.Load() {
					return errFenced
				}
				return errors.New("gave up waiting for the replica's lease")
			}
			continue
		}
		wctx, cancel := context.WithTimeout(ctx, writeTimeout)
		err := write(wctx)
		cancel()
		if err == nil || !unavailable(err) {
			r.databaseBack()
			return err
		}
		r.databaseWaiting(err)
		for retry := false; !retry; {
			if !r.pause(ctx, wait) {
				r.log.Error("the run was stopped while the database was unavailable; a write is lost", "err", err)
				return fmt.Errorf("gave up waiting for the database: %w", err)
			}
			wait = min(wait*2, retryMax)
			r.retries++
			if committed == nil {
				break
			}
			cctx, cancel := context.WithTimeout(ctx, writeTimeout)
			done, cerr := committed(cctx)
			cancel()
			switch {
			case cerr == nil && done:
				r.databaseBack()
				return nil
			case cerr == nil:
				retry = true
			case !unavailable(cerr):
				return cerr
			}
		}
	}
}

// pause waits d before a retry. Once the run is being stopped, every write
// shares one deadline, stopGrace on; pause reports false when it has
// passed, or when ctx (the write's own bound, if it has one) has ended.
func (r *Run) pause(ctx context.Context, d time.Duration) bool {
	if ctx.Err() != nil {
		return false
	}
	var stopped <-chan struct{}
	if r.runCtx != nil && r.giveUpAt.IsZero() {
		stopped = r.runCtx.Done()
	}
	if !r.giveUpAt.IsZero() {
		left := time.Until(r.giveUpAt)
		if left <= 0 {
			return false
		}
		d = min(d, left)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-stopped:
		r.giveUpAt = time.Now().Add(stopGrace)
	case <-ctx.Done():
		return false
	}
	return true
}

// seqCommitted is the committedFunc of a write that ends the log at seq
// last: it committed if the log reaches last. The loop is the log's only
// writer, so a log that ends before last has none of the write (a batch is
// one transaction), and one that ends anywhere else is an error.
func (r *Run) seqCommitted(first, last int64) committedFunc {
	return func(ctx context.Context) (bool, error) {
		n, err := r.journal.LastSeq(ctx, r.spec.SessionID)
		switch {
		case err != nil:
			return false, err
		case n >= last:
			return true, nil
		case n == first-1:
			return false, nil
		}
		return false, fmt.Errorf("the log ends at seq %d, expected %d or %d", n, first-1, last)
	}
}

// databaseWaiting notes that a write found the database unavailable; the
// first of a wait tells the log and the session's viewers.
func (r *Run) databaseWaiting(err error) {
	if !r.since.IsZero() {
		return
	}
	r.since, r.retries = time.Now(), 0
	r.log.Warn("the database cannot take the run's writes; holding Claude's output until it is back", "err", err)
	if o, ok := r.pub.(DatabaseObserver); ok {
		o.DatabaseWaiting(r.spec.SessionID, true)
	}
}

// databaseBack ends a wait, if one was under way.
func (r *Run) databaseBack() {
	if r.since.IsZero() {
		return
	}
	r.log.Info("the database takes the run's writes again", "waited", time.Since(r.since).Round(time.Millisecond),
		"retries", r.retries)
	r.since = time.Time{}
	if o, ok := r.pub.(DatabaseObserver); ok {
		o.DatabaseWaiting(r.spec.SessionID, false)
	}
}

// endLater hands the end of the run to closeLater when recording it gave
// up because the database was away (err from persist): the run was being
// stopped, and would stay open until a restart or a takeover closed it as
// something it was not.
func (r *Run) endLater(err error, code int, reason string) {
	if r.closeLater != nil && r.id != 0 && unavailable(err) {
		r.closeLater(r.id, code, reason)
	}
}

// closeRunLater records how run id ended once the database is back. It
// tries until the write succeeds or is refused, the supervisor's context
// ends, or Shutdown begins.
func (s *Supervisor) closeRunLater(id int64, code int, reason string) {
	log := s.log.With("run_id", id)
	log.Warn("the run ended while the database was away; its end is recorded once the database is back")
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for wait := retryFirst; ; wait = min(wait*2, retryMax) {
			select {
			case <-s.ctx.Done():
				return
			case <-time.After(wait):
			}
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return
			}
			ctx, cancel := context.WithTimeout(s.ctx, writeTimeout)
			err := s.journal.RunEnded(ctx, id, code, reason)
			cancel()
			switch {
			case err == nil:
				log.Info("recorded the end of a run that ended while the database was away", "reason", reason)
				return
			case !unavailable(err):
				log.Error("record run end", "err", err)
				return
			}
		}
	}()
}
