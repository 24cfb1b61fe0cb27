package hub

import (
	"strings"
	"time"

	"parley/runner"
)

// A session watched by many browsers here gets its streamed events in
// fewer, larger frames. Writing one frame to one socket costs the server
// about 20 µs of CPU (mostly the write itself); so the hub sends a
// session's event frames at most once per holdPerViewer × its viewers (at
// most maxHold), and a stream's fan-out needs at most about one core up to
// maxHold/holdPerViewer (2,000) viewers: a thousand viewers get a frame
// every 20 ms instead of one per batch the run loop writes. An event that
// comes when the session sent nothing for that long goes out at once;
// frames keep their order, and an ask is never held. Under HoldFrom
// viewers nothing is held.
const (
	holdPerViewer = 20 * time.Microsecond
	maxHold       = 40 * time.Millisecond
)

// HoldFrom is how many viewers of a session here make the hub hold its
// event frames (holdFor); under it every frame goes out as published.
const HoldFrom = 100

// holdFor is how long a session's event frames may be held with n viewers.
func (h *Hub) holdFor(n int) time.Duration {
	if n < HoldFrom {
		return 0
	}
	return min(time.Duration(n)*h.HoldPerViewer, maxHold)
}

// publish delivers f, or holds it with the session's other frames when
// many browsers watch and the session sent a frame less than holdFor ago.
// Anything not held, and any frame that does not follow the held ones,
// first sends what is held.
func (st *hubState) publish(topic string, f Frame) {
	hold := st.h.holdFor(len(st.subs[topic]))
	if f.Seq == 0 || f.Kind == runner.TypeInputRequested || hold == 0 {
		st.release(topic)
		st.deliver(topic, f)
		return
	}
	now := time.Now()
	h := st.held[topic]
	switch {
	case h == nil && now.Sub(st.sent[topic]) >= hold:
		st.sent[topic] = now
		st.deliver(topic, f)
		return
	case h != nil && f.FirstSeq() != h.frames[len(h.frames)-1].Seq+1:
		st.release(topic)
		st.deliver(topic, f)
		return
	case h == nil:
		h = &heldFrames{due: st.sent[topic].Add(hold)}
		st.held[topic] = h
		st.armHold(h.due)
	}
	h.frames = append(h.frames, f)
}

// heldFrames are a session's event frames waiting to go out as one.
type heldFrames struct {
	frames []Frame
	due    time.Time
}

// armHold makes the hold timer fire by due.
func (st *hubState) armHold(due time.Time) {
	if st.holdArmed && !due.Before(st.holdDue) {
		return
	}
	st.holdTimer.Reset(time.Until(due))
	st.holdArmed, st.holdDue = true, due
}

// release sends the topic's held frames as one.
func (st *hubState) release(topic string) {
	if h := st.held[topic]; h != nil {
		delete(st.held, topic)
		st.sent[topic] = time.Now()
		st.deliver(topic, mergeFrames(h.frames))
	}
}

// releaseDue sends the held frames whose time has come (the hold timer
// fired) and arms the timer for the rest.
func (st *hubState) releaseDue() {
	st.holdArmed = false
	now := time.Now()
	for topic, h := range st.held {
		if !h.due.After(now) {
			st.release(topic)
		} else {
			st.armHold(h.due)
		}
	}
	for topic, at := range st.sent {
		if now.Sub(at) >= maxHold && st.held[topic] == nil {
			delete(st.sent, topic) // forgotten once it no longer matters
		}
	}
}

// forgetHold drops what the hub keeps about a session nobody here watches
// any more.
func (st *hubState) forgetHold(topic string) {
	delete(st.held, topic)
	delete(st.sent, topic)
}

// mergeFrames makes one frame of consecutive ones, its message prepared
// once for every socket; runs of streamed text become one delta. It runs
// on the hub's goroutine: a copy of the held fragments and one render of
// the merged delta, once per hold, against a write to every viewer.
func mergeFrames(fs []Frame) Frame {
	if len(fs) == 1 {
		return fs[0]
	}
	m := Frame{First: fs[0].FirstSeq(), Seq: fs[len(fs)-1].Seq, Born: fs[0].Born, Kind: "batch", IsDelta: true, Msg: fs[0].Msg}
	var co Coalescer
	var text strings.Builder
	for _, f := range fs {
		co.Add(f)
		m.Unbound = m.Unbound || f.Unbound
		if f.IsDelta && f.Msg != m.Msg {
			m.IsDelta = false // deltas of two messages: one fragment each
		}
		if f.IsDelta {
			text.WriteString(f.Delta)
		} else {
			m.IsDelta = false
		}
	}
	m.Data = co.Take()
	if m.IsDelta {
		m.Delta = text.String()
	}
	return prepare(m)
}
