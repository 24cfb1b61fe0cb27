package server

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeSocket stands in for a wsConn at the fan-out's edge. It takes a
// frame straight from the fan-out when idle with nothing queued, and
// refuses every third offer as a busy writer would; its writer goroutine
// takes the rest from the channel, skipping what it has, as forward does.
type fakeSocket struct {
	mu      sync.Mutex
	got     []Frame
	last    int64
	offers  int
	direct  int
	channel int
	err     error // the first frame that left a gap
	ended   chan struct{}
}

func (w *fakeSocket) tryWrite(f Frame, s *Subscription) bool {
	if !w.mu.TryLock() {
		return false
	}
	defer w.mu.Unlock()
	w.offers++
	if w.offers%3 == 0 || s.queued.Load() > 0 || (f.Seq != 0 && f.first() != w.last+1) {
		return false
	}
	w.direct++
	w.take(f)
	return true
}

// writer takes what the hub sends through s's channel.
func (w *fakeSocket) writer(s *Subscription) {
	for f := range s.C {
		w.mu.Lock()
		s.took()
		w.channel++
		w.take(f)
		w.mu.Unlock()
	}
}

// take shows f, called holding mu.
func (w *fakeSocket) take(f Frame) {
	switch {
	case f.Seq != 0 && f.Seq <= w.last:
		return // shown already
	case f.Seq != 0 && f.first() != w.last+1 && w.err == nil:
		w.err = fmt.Errorf("frame %s after seq %d", span(f), w.last)
	}
	w.got = append(w.got, f)
	if f.Seq != 0 {
		w.last = f.Seq
	}
	if string(f.Data) == "end" {
		close(w.ended)
	}
}

// A large audience's fan-out writes straight to idle sockets, and what a
// socket cannot take so reaches it through its channel: every socket gets
// every event once, in order, and every other frame in its place among
// them, however the two ways interleave.
func TestFanoutGivesEverySocketEachFrameOnceInOrder(t *testing.T) {
	h, _ := runHub(t, func(h *Hub) { h.Presence, h.HoldPerViewer = nil, 0 }) // nothing held: every frame is a wave
	socks, subs := make([]*fakeSocket, holdFrom+20), make([]*Subscription, holdFrom+20)
	for i := range socks {
		s, err := h.Subscribe(t.Context(), "s")
		if err != nil {
			t.Fatal(err)
		}
		w := &fakeSocket{ended: make(chan struct{})}
		if i%10 != 0 { // every tenth socket goes live halfway: until then all through its channel
			s.setDirect(w)
		}
		go w.writer(s)
		socks[i], subs[i] = w, s
	}
	const events = 300
	var want strings.Builder
	for seq := int64(1); seq <= events; seq++ {
		text := fmt.Sprintf("w%d ", seq)
		want.WriteString(text)
		h.Publish("s", delta(seq, text))
		if seq%10 == 0 {
			h.Publish("s", Frame{Data: fmt.Appendf(nil, "note %d", seq)})
		}
		if seq == events/2 {
			for i := 0; i < len(subs); i += 10 {
				subs[i].setDirect(socks[i])
			}
		}
	}
	h.Publish("s", Frame{Data: []byte("end")})
	var direct, channel int
	for i, w := range socks {
		select {
		case <-w.ended:
		case <-time.After(30 * time.Second):
			t.Fatalf("socket %d did not get the last frame", i)
		}
		w.mu.Lock()
		got, err := w.got, w.err
		direct, channel = direct+w.direct, channel+w.channel
		w.mu.Unlock()
		if err != nil {
			t.Fatalf("socket %d: %v", i, err)
		}
		var text strings.Builder
		var last int64
		for _, f := range got {
			if f.Seq == 0 {
				if note := string(f.Data); note != "end" && note != fmt.Sprintf("note %d", last) {
					t.Fatalf("socket %d: %q after seq %d, want it right after its event", i, note, last)
				}
				continue
			}
			text.WriteString(f.Delta)
			last = f.Seq
		}
		if last != events || text.String() != want.String() {
			t.Fatalf("socket %d: last seq %d, text %q; want %d and every delta once", i, last, text.String(), events)
		}
	}
	if direct == 0 || channel == 0 {
		t.Fatalf("frames written directly %d, through channels %d: want both ways used", direct, channel)
	}
}

// A socket that leaves while its session's fan-out writes gets nothing
// more through its channel, which the hub has closed (a send on it would
// panic), and the fan-out ends with the session's last viewer.
func TestFanoutForgetsSocketsThatLeave(t *testing.T) {
	h, _ := runHub(t, func(h *Hub) { h.Presence, h.HoldPerViewer = nil, 0 })
	subs := make([]*Subscription, holdFrom)
	for i := range subs {
		s, err := h.Subscribe(t.Context(), "s")
		if err != nil {
			t.Fatal(err)
		}
		subs[i] = s
	}
	for seq := int64(1); seq <= 50; seq++ {
		h.Publish("s", delta(seq, "x"))
		if seq == 25 {
			for _, s := range subs[:holdFrom/2] {
				h.Unsubscribe(s)
			}
		}
	}
	h.Publish("s", Frame{Data: []byte("end")})
	for _, s := range subs[holdFrom/2:] {
		var last int64
		for f := range s.C {
			if string(f.Data) == "end" {
				break
			}
			last = f.Seq
		}
		if last != 50 {
			t.Fatalf("a viewer that stayed: last seq %d, want 50", last)
		}
	}
	for _, s := range subs {
		h.Unsubscribe(s)
	}
	count := make(chan int)
	h.do(func(st *hubState) { count <- len(st.fanouts) })
	if fanouts := <-count; fanouts != 0 {
		t.Fatalf("%d fan-outs left after every viewer left", fanouts)
	}
}

// A session whose audience all left and came back gets a new fan-out; what
// the old one still had to write goes to nobody new, and the new audience
// gets each frame once, in order, from where it joined.
func TestFanoutStartsAgainForANewAudience(t *testing.T) {
	h, _ := runHub(t, func(h *Hub) { h.Presence, h.HoldPerViewer = nil, 0 })
	old := make([]*Subscription, holdFrom)
	for i := range old {
		s, err := h.Subscribe(t.Context(), "s")
		if err != nil {
			t.Fatal(err)
		}
		old[i] = s
	}
	for seq := int64(1); seq <= 50; seq++ {
		h.Publish("s", delta(seq, "x"))
	}
	for _, s := range old {
		h.Unsubscribe(s)
	}
	socks := make([]*fakeSocket, holdFrom+10)
	for i := range socks {
		s, err := h.Subscribe(t.Context(), "s")
		if err != nil {
			t.Fatal(err)
		}
		w := &fakeSocket{last: 50, ended: make(chan struct{})} // caught up from the log
		s.setDirect(w)
		go w.writer(s)
		socks[i] = w
	}
	for seq := int64(51); seq <= 100; seq++ {
		h.Publish("s", delta(seq, "y"))
	}
	h.Publish("s", Frame{Data: []byte("end")})
	for i, w := range socks {
		select {
		case <-w.ended:
		case <-time.After(30 * time.Second):
			t.Fatalf("socket %d did not get the last frame", i)
		}
		w.mu.Lock()
		var text strings.Builder
		for _, f := range w.got {
			text.WriteString(f.Delta)
		}
		got, err, last := text.String(), w.err, w.last
		w.mu.Unlock()
		if err != nil || last != 100 || got != strings.Repeat("y", 50) {
			t.Fatalf("socket %d: err %v, last seq %d, text %q; want 51..100 once", i, err, last, got)
		}
	}
}
