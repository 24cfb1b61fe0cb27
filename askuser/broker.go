package askuser

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Errors returned by [Broker.Resolve].
var (
	// ErrAlreadyResolved means the ask was answered, timed out or cancelled before.
	ErrAlreadyResolved = errors.New("ask already resolved")
	// ErrUnknownAsk means no ask with that id was ever opened on this broker.
	ErrUnknownAsk = errors.New("unknown ask")
)

// Asker puts a form to the people of one live run and waits for the
// outcome. It returns an error only when the form cannot be asked at all
// (the run is ending, the form cannot be stored); a form that times out, is
// declined or is cancelled is an [Answer] with that status.
type Asker interface {
	Ask(ctx context.Context, f Form) (Answer, error)
}

// Broker joins the two halves of an ask: it maps run tokens to the live
// run's [Asker] for [RelayHandler], and it holds the pending asks that the
// run loop waits on until a person answers ([Broker.Open], [Broker.Resolve]).
// Its methods are safe for concurrent use.
type Broker struct {
	mu      sync.Mutex
	askers  map[string]*registration
	pending map[string]*pendingAsk
	// resolved remembers ids that were resolved so a late second answer gets
	// ErrAlreadyResolved rather than ErrUnknownAsk. It grows by one id per
	// ask for the life of the process, which is small next to the ask's rows.
	resolved map[string]struct{}
	limits   askLimits // per run token: open asks and their rate (flood.go)
}

type registration struct {
	asker Asker
	cfg   Config // the run's timeout bounds, for HTTPHandler
}

type pendingAsk struct {
	ch    chan Answer
	timer *time.Timer
}

// NewBroker returns an empty Broker.
func NewBroker() *Broker {
	return &Broker{
		askers:   make(map[string]*registration),
		pending:  make(map[string]*pendingAsk),
		resolved: make(map[string]struct{}),
		limits:   newAskLimits(),
	}
}

// Register makes token name a; the returned func removes it again and is
// safe to call more than once. Register a fresh [NewToken] per run and
// unregister it when the run ends, so a stale child cannot ask any more.
func (b *Broker) Register(token string, a Asker) (unregister func()) {
	return b.RegisterWithConfig(token, a, Config{})
}

// RegisterWithConfig is Register for a run whose ask_user is served by
// [HTTPHandler]: c carries the run's timeout bounds, which a
// `parley mcp-askuser` child would read from its config file.
func (b *Broker) RegisterWithConfig(token string, a Asker, c Config) (unregister func()) {
	reg := &registration{asker: limitedAsker{asker: a, token: token, lim: b.limits}, cfg: c}
	b.mu.Lock()
	b.askers[token] = reg
	b.mu.Unlock()
	return func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		// Only remove our own registration, not a later one for the same token.
		if b.askers[token] == reg {
			delete(b.askers, token)
		}
	}
}

// asker returns the Asker registered for token.
func (b *Broker) asker(token string) (Asker, bool) {
	reg, ok := b.registration(token)
	if !ok {
		return nil, false
	}
	return reg.asker, true
}

// registration returns what was registered for token.
func (b *Broker) registration(token string) (*registration, bool) {
	if token == "" {
		return nil, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	// A map lookup does not leak the token through timing in a useful way:
	// the hash compares whole keys, and the tokens are 256-bit random.
	reg, ok := b.askers[token]
	return reg, ok
}

// Open starts waiting for the answer to ask id and returns the channel (with
// a buffer of one) that receives it exactly once, from [Broker.Resolve].
// If timeout is positive and the ask is still open after it, Open calls
// onTimeout(id) on its own goroutine; onTimeout does not resolve the ask:
// it should record the timeout and then call Resolve with a timed_out
// Answer, which fails with ErrAlreadyResolved if a person answered first.
// Open panics if id was opened before: ask ids must be unique.
func (b *Broker) Open(id string, timeout time.Duration, onTimeout func(id string)) <-chan Answer {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, open := b.pending[id]
	_, done := b.resolved[id]
	if open || done {
		panic(fmt.Sprintf("askuser: ask %q opened twice", id))
	}
	p := &pendingAsk{ch: make(chan Answer, 1)}
	if timeout > 0 && onTimeout != nil {
		p.timer = time.AfterFunc(timeout, func() { onTimeout(id) })
	}
	b.pending[id] = p
	return p.ch
}

// Resolve delivers a as the outcome of ask id and stops its timeout. Only
// the first call for an id delivers; later ones return ErrAlreadyResolved,
// and an id never opened returns ErrUnknownAsk.
func (b *Broker) Resolve(id string, a Answer) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	p, ok := b.pending[id]
	if !ok {
		if _, done := b.resolved[id]; done {
			return fmt.Errorf("resolve ask %s: %w", id, ErrAlreadyResolved)
		}
		return fmt.Errorf("resolve ask %s: %w", id, ErrUnknownAsk)
	}
	if p.timer != nil {
		p.timer.Stop()
	}
	delete(b.pending, id)
	b.resolved[id] = struct{}{}
	p.ch <- a // never blocks: the buffer holds one and this is the only send
	return nil
}

// Pending returns the number of asks opened and not yet resolved.
func (b *Broker) Pending() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.pending)
}
