// Package hub fans a session's frames out to every browser watching it,
// on this replica. One goroutine owns the subscriber map (no mutex); a slow
// browser is dropped, never waited for, and catches up from the log.
package hub

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/gorilla/websocket"
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
	// Msg is the message a delta frame's text belongs to: its block's id
	// is named in the fragment (views.TextDelta).
	Msg string
	// Unbound marks a frame rendered without knowing which message its
	// deltas belong to: a socket reads its events from the log instead.
	Unbound bool
	// Born is when the event was recorded, for latency metrics.
	Born time.Time
	// Kind is the event type, for metrics.
	Kind string
	// About is the session a project's board poke is about (package
	// board); "" = any of the project's.
	About string
	// prep is the message a socket sends for this frame alone, made once
	// for all of them (prepared.go).
	prep *websocket.PreparedMessage
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
	// Recheck says the viewer's access should be checked again now.
	Recheck <-chan struct{}
	recheck chan struct{}
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
	Presence func(names []string) Frame
	// Announce, if set, is told the viewers of a session on this replica
	// after they changed (gathered like presence frames); first says the
	// session had none here before. It runs on the hub's goroutine and
	// must not block (see cluster.go).
	Announce func(sessionID string, names []string, first bool)
	// HoldPerViewer is how long a session's event frames may be held per
	// viewer (holdPerViewer; tests set more).
	HoldPerViewer time.Duration
	subscribe     chan *Subscription
	unsubscribe   chan *Subscription
	// watching counts each topic's subscriptions, for Watches: one is
	// counted before its Subscribe returns, and uncounted once dropped.
	watchMu  sync.Mutex
	watching map[string]int
	publish  chan published
	control  chan func(*hubState)
	done     chan struct{}
}

// New returns a Hub; Run must be running for it to deliver.
func New() *Hub {
	return &Hub{Presence: presenceFrame, HoldPerViewer: holdPerViewer, watching: map[string]int{},
		subscribe: make(chan *Subscription), unsubscribe: make(chan *Subscription),
		publish: make(chan published, 1024), control: make(chan func(*hubState), 64), done: make(chan struct{})}
}

// hubState is what the hub's goroutine owns: nothing else touches it.
type hubState struct {
	h    *Hub
	subs map[string]map[*Subscription]struct{}
	// remote holds the viewers of sessions on other replicas, by session
	// and replica (cluster.go).
	remote map[string]map[string][]string
	// dirty sessions get a presence frame when the timer fires; local ones
	// are also announced to the other replicas (first: none were here).
	dirty map[string]bool
	local map[string]bool
	first map[string]bool
	timer *time.Timer
	armed bool
	// held are the event frames of busy sessions waiting to go out as one
	// (holdFor); holdTimer sends them when due.
	held      map[string]*heldFrames
	sent      map[string]time.Time // when a held session's last frame went out
	holdTimer *time.Timer
	holdArmed bool
	holdDue   time.Time
}

// drop ends a subscription: its channel closes.
func (st *hubState) drop(s *Subscription) {
	if set, ok := st.subs[s.sessionID]; ok {
		if _, ok := set[s]; ok {
			delete(set, s)
			close(s.c)
			st.h.watch(s.sessionID, -1)
			if len(set) == 0 {
				delete(st.subs, s.sessionID)
				st.forgetHold(s.sessionID)
			}
			st.changed(s.sessionID, true)
		}
	}
}

// changed marks the session's presence for the next frame; the timer is
// armed by the first change after a send.
func (st *hubState) changed(sessionID string, local bool) {
	st.dirty[sessionID] = true
	if local {
		st.local[sessionID] = true
	}
	if !st.armed {
		st.timer.Reset(presenceDelay)
		st.armed = true
	}
}

// deliver hands f to every subscriber of topic; a slow browser is dropped,
// never waited for.
func (st *hubState) deliver(topic string, f Frame) {
	for s := range st.subs[topic] {
		select {
		case s.c <- f:
		default:
			st.drop(s)
		}
	}
}

// flushPresence sends the gathered presence changes.
func (st *hubState) flushPresence() {
	st.armed = false
	ids := slices.Collect(maps.Keys(st.dirty))
	clear(st.dirty)
	for _, id := range ids {
		names := st.viewers(st.subs[id])
		if st.local[id] && st.h.Announce != nil && isSessionTopic(id) {
			st.h.Announce(id, slices.Clone(names), st.first[id]) // its own: the frame sorts names
		}
		st.h.sendPresence(st, id, append(names, st.remoteNames(id)...))
	}
	clear(st.local)
	clear(st.first)
}

// Run delivers frames until ctx ends.
func (h *Hub) Run(ctx context.Context) error {
	defer close(h.done)
	st := &hubState{h: h, subs: map[string]map[*Subscription]struct{}{}, remote: map[string]map[string][]string{},
		dirty: map[string]bool{}, local: map[string]bool{}, first: map[string]bool{}, timer: time.NewTimer(presenceDelay),
		held: map[string]*heldFrames{}, sent: map[string]time.Time{}, holdTimer: time.NewTimer(maxHold)}
	st.timer.Stop()
	st.holdTimer.Stop()
	for {
		select {
		case s := <-h.subscribe:
			if st.subs[s.sessionID] == nil {
				st.subs[s.sessionID] = map[*Subscription]struct{}{}
				st.first[s.sessionID] = true
			}
			st.subs[s.sessionID][s] = struct{}{}
			st.changed(s.sessionID, true)
		case s := <-h.unsubscribe:
			st.drop(s)
		case p := <-h.publish:
			st.publish(p.sessionID, p.f)
		case <-st.holdTimer.C:
			st.releaseDue()
		case f := <-h.control:
			f(st)
		case <-st.timer.C:
			st.flushPresence()
		case <-ctx.Done():
			for _, set := range st.subs {
				for s := range set {
					close(s.c)
					h.watch(s.sessionID, -1)
				}
			}
			return nil
		}
	}
}

// viewers names the subscribers watching by name.
func (st *hubState) viewers(set map[*Subscription]struct{}) []string {
	var names []string
	for s := range set {
		if s.viewer != "" {
			names = append(names, s.viewer)
		}
	}
	return names
}

// sendPresence tells a session's subscribers here who is watching. A
// subscriber too slow to take it is dropped like for any other frame.
func (h *Hub) sendPresence(st *hubState, sessionID string, names []string) {
	if h.Presence == nil || len(st.subs[sessionID]) == 0 || len(names) == 0 {
		return // nobody here, or a topic nobody watches by name (a project's inbox topic)
	}
	st.deliver(sessionID, prepare(h.Presence(names)))
}

// Subscribe starts delivering the session's frames.
func (h *Hub) Subscribe(ctx context.Context, sessionID string) (*Subscription, error) {
	return h.SubscribeAs(ctx, sessionID, "")
}

// SubscribeAs starts delivering the session's frames to viewer, who is
// listed in the session's presence frames until Unsubscribe.
func (h *Hub) SubscribeAs(ctx context.Context, sessionID, viewer string) (*Subscription, error) {
	c, rc := make(chan Frame, subBuffer), make(chan struct{}, 1)
	s := &Subscription{C: c, c: c, sessionID: sessionID, viewer: viewer, Recheck: rc, recheck: rc}
	h.watch(sessionID, 1) // before the subscriber reads anything from the log
	select {
	case h.subscribe <- s:
		return s, nil
	case <-h.done:
		h.watch(sessionID, -1)
		return nil, context.Canceled
	case <-ctx.Done():
		h.watch(sessionID, -1)
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
// ProjectTopic). It blocks only if the hub's queue is full, and never once
// the hub has stopped.
func (h *Hub) Publish(topic string, f Frame) {
	f = prepare(f) // on the publisher's goroutine, once for every socket
	select {
	case h.publish <- published{sessionID: topic, f: f}:
	case <-h.done:
	}
}

// ProjectTopic is the hub topic on which a project's asks are announced:
// every open inbox (and every page's ask counter) of a member listens to
// the topics of the member's projects.
func ProjectTopic(projectID int64) string { return "project:" + strconv.FormatInt(projectID, 10) }

// FirstSeq is the seq of the first event the frame shows.
func (f Frame) FirstSeq() int64 {
	if f.First != 0 {
		return f.First
	}
	return f.Seq
}
