package server

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"time"
)

// presenceDelay gathers the joins and leaves of a moment into one presence
// frame per viewer: a thousand viewers joining cost a few frames each, not
// a thousand.
const presenceDelay = 50 * time.Millisecond

// Frame is one message for the browsers of a session: rendered HTML and
// the seq of the event it shows (0 for frames that show no event).
type Frame struct {
	Seq  int64
	Data []byte
	// First is the seq of the first event a batch frame shows (0: Seq).
	First int64
	// IsDelta marks a frame that only appends Delta, streamed text, to the
	// live message: sockets merge runs of them (coalescer).
	IsDelta bool
	Delta   string
	// Born is when the event was recorded, for latency metrics.
	Born time.Time
	// Kind is the event type, for metrics.
	Kind string
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
	viewer    string // who is watching, for presence; "" = not shown
}

type published struct {
	sessionID string
	f         Frame
}

// Hub fans a session's frames out to every browser watching it. One
// goroutine owns the subscriber map; nothing else touches it.
type Hub struct {
	// Presence renders the "who is here" frame sent to a session's
	// subscribers whenever one joins or leaves; nil sends none.
	Presence    func(names []string) Frame
	subscribe   chan *Subscription
	unsubscribe chan *Subscription
	publish     chan published
	done        chan struct{}
}

// NewHub returns a Hub; Run must be running for it to deliver.
func NewHub() *Hub {
	return &Hub{Presence: presenceFrame, subscribe: make(chan *Subscription), unsubscribe: make(chan *Subscription),
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
	// Presence is sent for the sessions whose viewers changed, once the
	// timer fires; the timer is armed by the first change after a send.
	dirty := map[string]bool{}
	presence := time.NewTimer(presenceDelay)
	presence.Stop()
	armed := false
	changed := func(sessionID string) {
		dirty[sessionID] = true
		if !armed {
			presence.Reset(presenceDelay)
			armed = true
		}
	}
	for {
		select {
		case s := <-h.subscribe:
			if subs[s.sessionID] == nil {
				subs[s.sessionID] = map[*Subscription]struct{}{}
			}
			subs[s.sessionID][s] = struct{}{}
			changed(s.sessionID)
		case s := <-h.unsubscribe:
			drop(s)
			changed(s.sessionID)
		case p := <-h.publish:
			for s := range subs[p.sessionID] {
				select {
				case s.c <- p.f:
				default: // a slow browser is dropped, never waited for
					drop(s)
					changed(s.sessionID)
				}
			}
		case <-presence.C:
			armed = false
			ids := slices.Collect(maps.Keys(dirty))
			clear(dirty)
			for _, id := range ids {
				h.sendPresence(subs[id], func(s *Subscription) { drop(s); changed(s.sessionID) })
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

// sendPresence tells a session's subscribers who is watching. A
// subscriber too slow to take it is dropped like for any other frame.
func (h *Hub) sendPresence(set map[*Subscription]struct{}, drop func(*Subscription)) {
	if h.Presence == nil || len(set) == 0 {
		return
	}
	var names []string
	for s := range set {
		if s.viewer != "" {
			names = append(names, s.viewer)
		}
	}
	if len(names) == 0 {
		return // a topic nobody watches by name (a project's inbox topic)
	}
	f := h.Presence(names)
	for s := range set {
		select {
		case s.c <- f:
		default:
			drop(s)
		}
	}
}

// Subscribe starts delivering the session's frames.
func (h *Hub) Subscribe(ctx context.Context, sessionID string) (*Subscription, error) {
	return h.SubscribeAs(ctx, sessionID, "")
}

// SubscribeAs starts delivering the session's frames to viewer, who is
// listed in the session's presence frames until Unsubscribe.
func (h *Hub) SubscribeAs(ctx context.Context, sessionID, viewer string) (*Subscription, error) {
	c := make(chan Frame, subBuffer)
	s := &Subscription{C: c, c: c, sessionID: sessionID, viewer: viewer}
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

// Publish queues f for the topic's subscribers (a session's id, or
// projectTopic). It blocks only if the hub's queue is full, and never once
// the hub has stopped.
func (h *Hub) Publish(topic string, f Frame) {
	select {
	case h.publish <- published{sessionID: topic, f: f}:
	case <-h.done:
	}
}

// projectTopic is the hub topic on which a project's asks are announced:
// every open inbox (and every page's ask counter) of a member listens to
// the topics of the member's projects.
func projectTopic(projectID int64) string { return "project:" + strconv.FormatInt(projectID, 10) }

// first is the seq of the first event the frame shows.
func (f Frame) first() int64 {
	if f.First != 0 {
		return f.First
	}
	return f.Seq
}
