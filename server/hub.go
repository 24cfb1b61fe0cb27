package server

import "context"

// Frame is one message for the browsers of a session: rendered HTML and
// the seq of the event it shows (0 for frames that show no event).
type Frame struct {
	Seq  int64
	Data []byte
}

// subBuffer is how many frames a browser may fall behind before it is
// dropped; it then reconnects and catches up from Postgres.
const subBuffer = 512

// Subscription receives a session's frames. C is closed when the hub drops
// the subscriber for being too slow, or when the hub stops.
type Subscription struct {
	C         <-chan Frame
	c         chan Frame
	sessionID string
}

type published struct {
	sessionID string
	f         Frame
}

// Hub fans a session's frames out to every browser watching it. One
// goroutine owns the subscriber map; nothing else touches it.
type Hub struct {
	subscribe   chan *Subscription
	unsubscribe chan *Subscription
	publish     chan published
	done        chan struct{}
}

// NewHub returns a Hub; Run must be running for it to deliver.
func NewHub() *Hub {
	return &Hub{subscribe: make(chan *Subscription), unsubscribe: make(chan *Subscription),
		publish: make(chan published, 1024), done: make(chan struct{})}
}

// Run delivers frames until ctx ends.
func (h *Hub) Run(ctx context.Context) error {
	defer close(h.done)
	subs := map[string]map[*Subscription]struct{}{}
	drop := func(s *Subscription) {
		if set, ok := subs[s.sessionID]; ok {
			if _, ok := set[s]; ok {
				delete(set, s)
				close(s.c)
				if len(set) == 0 {
					delete(subs, s.sessionID)
				}
			}
		}
	}
	for {
		select {
		case s := <-h.subscribe:
			if subs[s.sessionID] == nil {
				subs[s.sessionID] = map[*Subscription]struct{}{}
			}
			subs[s.sessionID][s] = struct{}{}
		case s := <-h.unsubscribe:
			drop(s)
		case p := <-h.publish:
			for s := range subs[p.sessionID] {
				select {
				case s.c <- p.f:
				default: // a slow browser is dropped, never waited for
					drop(s)
				}
			}
		case <-ctx.Done():
			for _, set := range subs {
				for s := range set {
					close(s.c)
				}
			}
			return nil
		}
	}
}

// Subscribe starts delivering the session's frames.
func (h *Hub) Subscribe(ctx context.Context, sessionID string) (*Subscription, error) {
	c := make(chan Frame, subBuffer)
	s := &Subscription{C: c, c: c, sessionID: sessionID}
	select {
	case h.subscribe <- s:
		return s, nil
	case <-h.done:
		return nil, context.Canceled
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Unsubscribe stops delivery; s.C is then closed.
func (h *Hub) Unsubscribe(s *Subscription) {
	select {
	case h.unsubscribe <- s:
	case <-h.done:
	}
}

// Publish queues f for the session's subscribers. It blocks only if the
// hub's queue is full, and never once the hub has stopped.
func (h *Hub) Publish(sessionID string, f Frame) {
	select {
	case h.publish <- published{sessionID: sessionID, f: f}:
	case <-h.done:
	}
}
