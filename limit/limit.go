// Package limit holds Parley's resource limits: per-key rates (new sessions
// and prompts per user per minute), per-key connection caps (WebSockets per
// user), a bounded pool for expensive unauthenticated work (bcrypt), request
// body limits, and the default cap on live claude processes.
package limit

import (
	"sync"
	"time"
)

// Rate allows each key up to perMinute events a minute: a token bucket of
// perMinute tokens refilled evenly over the minute, so a burst of perMinute
// passes and then one more every 60/perMinute seconds.
type Rate struct {
	perMinute int
	period    time.Duration // perMinute events per period: a minute, unless NewRateOver
	now       func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

// maxBuckets bounds the map: past it, full buckets (keys that have been
// quiet for a minute) are forgotten.
const maxBuckets = 10000

// NewRate returns a Rate; perMinute <= 0 allows everything.
func NewRate(perMinute int) *Rate {
	return NewRateOver(perMinute, time.Minute)
}

// NewRateOver returns a Rate that allows each key n events per period: a
// burst of n, then one more every period/n. n <= 0 allows everything.
func NewRateOver(n int, period time.Duration) *Rate {
	return &Rate{perMinute: n, period: period, now: time.Now, buckets: map[string]*bucket{}}
}

// Allow takes one token of key's bucket. When there is none it returns
// false and how long until there will be one.
func (l *Rate) Allow(key string) (bool, time.Duration) {
	if l == nil || l.perMinute <= 0 {
		return true, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	capacity := float64(l.perMinute)
	perToken := l.period / time.Duration(l.perMinute)
	b, ok := l.buckets[key]
	if !ok {
		if len(l.buckets) >= maxBuckets {
			l.forgetFull(now, capacity, perToken)
		}
		b = &bucket{tokens: capacity, at: now}
		l.buckets[key] = b
	}
	b.tokens = min(capacity, b.tokens+float64(now.Sub(b.at))/float64(perToken))
	b.at = now
	if b.tokens < 1 {
		return false, time.Duration((1 - b.tokens) * float64(perToken))
	}
	b.tokens--
	return true, 0
}

// Refund gives key back one token, as if an event it was allowed had not
// happened (never past the bucket's capacity).
func (l *Rate) Refund(key string) {
	if l == nil || l.perMinute <= 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if b, ok := l.buckets[key]; ok {
		b.tokens = min(float64(l.perMinute), b.tokens+1)
	}
}

// PerMinute is the configured rate (0 = unlimited); for NewRateOver, its n.
func (l *Rate) PerMinute() int {
	if l == nil {
		return 0
	}
	return l.perMinute
}

func (l *Rate) forgetFull(now time.Time, capacity float64, perToken time.Duration) {
	for k, b := range l.buckets {
		if b.tokens+float64(now.Sub(b.at))/float64(perToken) >= capacity {
			delete(l.buckets, k)
		}
	}
}

// Conns caps how many connections each key holds at once.
type Conns struct {
	max  int
	mu   sync.Mutex
	open map[string]int
}

// NewConns returns a Conns; max <= 0 allows any number.
func NewConns(max int) *Conns { return &Conns{max: max, open: map[string]int{}} }

// Acquire takes one of key's connections; release gives it back and is
// safe to call more than once. ok is false when key already holds max.
func (c *Conns) Acquire(key string) (release func(), ok bool) {
	if c == nil || c.max <= 0 {
		return func() {}, true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open[key] >= c.max {
		return nil, false
	}
	c.open[key]++
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.open[key]--; c.open[key] <= 0 {
				delete(c.open, key)
			}
		})
	}, true
}

// Max is the configured cap (0 = none).
func (c *Conns) Max() int {
	if c == nil {
		return 0
	}
	return c.max
}
