package gateway

import (
	"sync"
	"time"
)

// limiter counts requests per key in a sliding window.
type limiter struct {
	window time.Duration
	now    func() time.Time

	mu   sync.Mutex
	seen map[string][]time.Time // per key, oldest first, all within window
}

// limitKey is one limit a request is counted against.
type limitKey struct {
	key string
	max int
	msg string // why a request over the limit is refused
}

func newLimiter(window time.Duration, now func() time.Time) *limiter {
	return &limiter{window: window, now: now, seen: map[string][]time.Time{}}
}

// take counts one request against every key, unless one of them is full:
// then nothing is counted and take returns that key's message.
func (l *limiter) take(keys []limitKey) string {
	if len(keys) == 0 {
		return ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	for _, k := range keys {
		l.seen[k.key] = l.trim(l.seen[k.key], now)
		if len(l.seen[k.key]) >= k.max {
			return k.msg
		}
	}
	for _, k := range keys {
		l.seen[k.key] = append(l.seen[k.key], now)
	}
	return ""
}

// trim drops the times that have left the window; an empty list is freed.
func (l *limiter) trim(ts []time.Time, now time.Time) []time.Time {
	i := 0
	for i < len(ts) && now.Sub(ts[i]) >= l.window {
		i++
	}
	if i == len(ts) {
		return nil
	}
	return ts[i:]
}
