package hub

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// delta is an event frame of streamed text, as a run loop publishes it.
func delta(seq int64, text string) Frame {
	return Frame{Seq: seq, IsDelta: true, Delta: text, Data: []byte(text), Kind: "stream_event"}
}

// nextFrame returns the subscription's next frame.
func nextFrame(t *testing.T, s *Subscription) Frame {
	t.Helper()
	select {
	case f, ok := <-s.C:
		if !ok {
			t.Fatal("subscription closed")
		}
		return f
	case <-time.After(5 * time.Second):
		t.Fatal("no frame")
	}
	return Frame{}
}

// noFrame fails if the subscription gets a frame within d.
func noFrame(t *testing.T, s *Subscription, d time.Duration) {
	t.Helper()
	select {
	case f := <-s.C:
		t.Fatalf("unexpected frame %d..%d %q", f.FirstSeq(), f.Seq, f.Data)
	case <-time.After(d):
	}
}

// span is "first..seq" of a frame.
func span(f Frame) string { return fmt.Sprintf("%d..%d", f.FirstSeq(), f.Seq) }

// With many viewers the hub sends a stream's frames at most once per
// holdFor: a lone event at once, then what gathered as one frame, in
// order; an ask, a frame that is no event and a gap are never held back
// behind (or merged with) what waits.
func TestHubHoldsAStreamForALargeAudience(t *testing.T) {
	synctest.Test(t, testHubHoldsAStream)
}

// testHubHoldsAStream runs in a synctest bubble: the hold's timer runs on
// the bubble's clock, so the test neither waits for it nor races it.
func testHubHoldsAStream(t *testing.T) {
	h, _ := runHub(t, func(h *Hub) { h.HoldPerViewer = time.Millisecond }) // a 100 ms hold
	subs := make([]*Subscription, HoldFrom)
	for i := range subs {
		s, err := h.Subscribe(t.Context(), "s")
		if err != nil {
			t.Fatal(err)
		}
		subs[i] = s
	}
	watch := subs[HoldFrom/2]
	h.Publish("s", delta(1, "a"))
	if f := nextFrame(t, watch); span(f) != "1..1" {
		t.Fatalf("lone event: got frame %s, want 1..1 at once", span(f))
	}
	for seq := int64(2); seq <= 10; seq++ {
		h.Publish("s", delta(seq, "b"))
	}
	f := nextFrame(t, watch)
	if span(f) != "2..10" || !f.IsDelta || f.Delta != strings.Repeat("b", 9) || f.prep == nil {
		t.Fatalf("burst: got frame %s delta=%v %q prepared=%v, want one prepared delta frame 2..10", span(f), f.IsDelta, f.Delta, f.prep != nil)
	}
	if !strings.Contains(string(f.Data), strings.Repeat("b", 9)) {
		t.Fatalf("burst: merged frame lacks the text: %q", f.Data)
	}
	noFrame(t, watch, 3*h.holdFor(HoldFrom))

	// A frame that is no event sends what is held first.
	h.Publish("s", delta(11, "c")) // alone again: at once
	h.Publish("s", delta(12, "d"))
	h.Publish("s", Frame{Data: []byte("queue line")})
	if f := nextFrame(t, watch); span(f) != "11..11" {
		t.Fatalf("after a pause: got %s, want 11..11 at once", span(f))
	}
	if f := nextFrame(t, watch); span(f) != "12..12" {
		t.Fatalf("before a non-event frame: got %s, want the held 12..12", span(f))
	}
	if f := nextFrame(t, watch); string(f.Data) != "queue line" {
		t.Fatalf("non-event frame: got %q", f.Data)
	}

	// An ask is never held.
	h.Publish("s", delta(13, "e"))
	h.Publish("s", Frame{Seq: 14, Data: []byte("ask card"), Kind: "input_requested"})
	if f := nextFrame(t, watch); span(f) != "13..13" {
		t.Fatalf("before an ask: got %s, want the held 13..13", span(f))
	}
	if f := nextFrame(t, watch); span(f) != "14..14" || string(f.Data) != "ask card" {
		t.Fatalf("ask: got %s %q", span(f), f.Data)
	}

	// A frame that does not follow the held ones is not merged with them.
	h.Publish("s", delta(15, "f"))
	h.Publish("s", delta(20, "g"))
	if f := nextFrame(t, watch); span(f) != "15..15" {
		t.Fatalf("before a gap: got %s, want 15..15", span(f))
	}
	if f := nextFrame(t, watch); span(f) != "20..20" {
		t.Fatalf("after a gap: got %s, want 20..20", span(f))
	}
}

// Under HoldFrom viewers every frame goes out as published.
func TestHubHoldsNothingForASmallAudience(t *testing.T) {
	h, _ := runHub(t)
	if h.holdFor(HoldFrom-1) != 0 || h.holdFor(1000) != 20*time.Millisecond || h.holdFor(1_000_000) != maxHold {
		t.Fatalf("holdFor: %s %s %s", h.holdFor(HoldFrom-1), h.holdFor(1000), h.holdFor(1_000_000))
	}
	s, err := h.Subscribe(t.Context(), "s")
	if err != nil {
		t.Fatal(err)
	}
	for seq := int64(1); seq <= 5; seq++ {
		h.Publish("s", delta(seq, "x"))
	}
	for seq := int64(1); seq <= 5; seq++ {
		if f := nextFrame(t, s); span(f) != fmt.Sprintf("%d..%d", seq, seq) {
			t.Fatalf("frame %d: got %s", seq, span(f))
		}
	}
}

// Presence is O(N): a thousand viewers joining at once get one presence
// frame each (the joins of a moment are gathered), not one per join, and
// one leaving sends one more to each of the others. Before it was
// gathered, a thousand joins sent 501,500 frames.
func TestHubPresenceFramesGrowLinearly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := runHub(t)
		const n = 1000
		subs := make([]*Subscription, n)
		for i := range subs {
			s, err := h.SubscribeAs(t.Context(), "s", fmt.Sprintf("viewer %d", i))
			if err != nil {
				t.Fatal(err)
			}
			subs[i] = s
		}
		time.Sleep(3 * presenceDelay)
		synctest.Wait()
		presences := func(subs []*Subscription) (frames int) {
			for i, s := range subs {
				for len(s.C) > 0 {
					f := <-s.C
					if f.Seq != 0 || !strings.Contains(string(f.Data), "viewer 999") {
						t.Fatalf("viewer %d got a frame that is not the full presence list: %.80q", i, f.Data)
					}
					frames++
				}
			}
			return frames
		}
		if got := presences(subs); got != n {
			t.Fatalf("%d viewers joining sent %d presence frames, want %d (one each)", n, got, n)
		}
		h.Unsubscribe(subs[0])
		time.Sleep(3 * presenceDelay)
		synctest.Wait()
		if got := presences(subs[1:]); got != n-1 {
			t.Fatalf("one viewer leaving sent %d presence frames to the %d others, want one each", got, n-1)
		}
	})
}

// Watches counts what subscribes to a topic from before Subscribe returns
// until the subscription ends, however it ends: the cluster reads another
// replica's events only for a session watched here (cluster/fanout.go).
func TestHubWatches(t *testing.T) {
	h, _ := runHub(t)
	waitUnwatched := func(topic string) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); h.Watches(topic); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s is still watched", topic)
			}
		}
	}
	if session, asks := h.Watching("s", 7); h.Watches("s") || session || asks {
		t.Fatal("an empty hub watches s")
	}
	a, err := h.Subscribe(t.Context(), "s")
	if err != nil {
		t.Fatal(err)
	}
	b, err := h.SubscribeAs(t.Context(), "s", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if session, asks := h.Watching("s", 7); !h.Watches("s") || !session || asks || h.Watches("other") {
		t.Fatal("s is not watched, or another topic is, once s has subscribers")
	}
	h.Unsubscribe(a)
	if !h.Watches("s") {
		t.Fatal("s is not watched while it still has a subscriber")
	}
	h.CloseSession("s") // an archived session: its sockets close
	waitUnwatched("s")
	if _, open := <-b.C; open {
		t.Fatal("the closed session's subscription got a frame")
	}
	// A project's inbox watches the asks of every session of the project.
	inbox, err := h.Subscribe(t.Context(), ProjectTopic(7))
	if err != nil {
		t.Fatal(err)
	}
	if session, asks := h.Watching("s", 7); session || !asks {
		t.Fatal("the asks of a session of project 7 are not watched through the project's inbox, or the session is")
	}
	if _, asks := h.Watching("s", 8); asks {
		t.Fatal("an inbox of project 7 watches the asks of project 8")
	}
	// A subscriber too slow to keep up is dropped, and no longer counts.
	for seq := int64(1); seq <= subBuffer+1; seq++ {
		h.Publish(ProjectTopic(7), Frame{Seq: seq, Data: []byte("x")})
	}
	waitUnwatched(ProjectTopic(7))
	h.Unsubscribe(inbox) // once more: counted out once
	h.watchMu.Lock()
	defer h.watchMu.Unlock()
	if len(h.watching) != 0 {
		t.Fatalf("left counted: %v", h.watching)
	}
}

// A hub that stops ends every subscription, and counts none any more.
func TestHubWatchesNothingOnceStopped(t *testing.T) {
	h := New()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); _ = h.Run(ctx) }()
	s, err := h.Subscribe(t.Context(), "s")
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	<-done
	if _, open := <-s.C; open || h.Watches("s") {
		t.Fatalf("after the hub stopped: subscription open %v, s watched %v", open, h.Watches("s"))
	}
	h.Unsubscribe(s) // the page's deferred call: nothing to count out twice
	if h.Watches("s") {
		t.Fatal("s is watched again")
	}
}
