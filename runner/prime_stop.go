package runner

import (
	"context"
	"errors"
	"sync"
)

// A resume ahead primes before its run is live (prime.go): Stop and
// StopProject, which end live runs, end a priming start too, so that an
// archived session or a deleted project gets no process when its prime
// is done (TestAttackArchiveDuringPrime).

// errStoppedWhilePriming says the session (or its project) was stopped
// while its process was primed ahead.
var errStoppedWhilePriming = errors.New("the session was stopped while its process was readied")

// priming is one resume ahead priming now.
type priming struct {
	sessionID string
	projectID int64
	stopped   chan struct{} // closed by stop
}

// primings are the resumes ahead priming now. The zero value is ready.
type primings struct {
	mu sync.Mutex
	m  map[*priming]struct{}
	// yield says when a start ahead gives way (ahead_yield.go).
	yield func(ctx context.Context, sessionID string) bool
}

// add registers a priming start; remove it with the returned func.
func (ps *primings) add(sessionID string, projectID int64) (*priming, func()) {
	p := &priming{sessionID: sessionID, projectID: projectID, stopped: make(chan struct{})}
	ps.mu.Lock()
	if ps.m == nil {
		ps.m = map[*priming]struct{}{}
	}
	ps.m[p] = struct{}{}
	ps.mu.Unlock()
	return p, func() {
		ps.mu.Lock()
		delete(ps.m, p)
		ps.mu.Unlock()
	}
}

// stop ends the priming starts that match.
func (ps *primings) stop(match func(priming) bool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for p := range ps.m {
		if match(*p) {
			delete(ps.m, p)
			close(p.stopped)
		}
	}
}

// isStopped says whether p was stopped.
func (p *priming) isStopped() bool {
	select {
	case <-p.stopped:
		return true
	default:
		return false
	}
}
