package server

import (
	"maps"
	"runtime"
	"slices"
	"sync"
	"time"

	"parley/runner"
)

// A session watched by holdFrom or more browsers here has its frames
// written by a fan-out of its own. Handing a frame to a thousand socket
// goroutines wakes a thousand goroutines, and every other goroutine that
// wakes meanwhile (a run loop whose insert committed, the hub) waits
// behind all of them: a wave delayed the next events by up to its own
// length. The fan-out instead writes each frame's one prepared message
// from fanoutWorkers goroutines straight to every socket whose writer is
// idle and has nothing queued, yielding every fanoutYield writes. Frames
// that come while a wave goes out are merged into the next: waves never
// queue up behind each other. A socket that cannot take a frame so (its
// writer is busy, catching up, or has frames queued) gets it through its
// channel from the hub, as under holdFrom: every socket gets every frame
// once, in order.
const (
	fanoutWorkers = 2
	fanoutYield   = 8
	// directMax is the largest frame written straight to a socket: it fits
	// the free send buffer of any socket whose reader keeps up, so such a
	// write does not block. A larger frame (a long message, a tool's
	// output) goes through the socket's channel, and its own writer waits
	// for the network as long as writeWait.
	directMax = 16 << 10
	// directWait bounds a write straight to a socket; one that cannot
	// take a small frame for that long has not read for a while. It is
	// closed (the page reconnects and catches up from the log) rather than
	// holding back the wave for everybody else.
	directWait = 50 * time.Millisecond
)

// A directWriter writes f to its socket on the caller's goroutine when the
// socket's own writer is idle and s has nothing queued for it. It reports
// whether f is done with: written, or the socket failed and is closing.
type directWriter interface {
	tryWrite(f Frame, s *Subscription) bool
}

// direct is what a Subscription holds of its directWriter.
type direct struct{ w directWriter }

// setDirect lets a large audience's fan-out write to w directly; a socket
// calls it once it is caught up.
func (s *Subscription) setDirect(w directWriter) { s.direct.Store(&direct{w}) }

// writeDirect writes f straight to s's socket, or else counts it as
// queued for s's channel: from then on nothing is written to s directly
// until its writer has taken what is queued, so nothing overtakes it.
func (s *Subscription) writeDirect(f Frame) bool {
	if d := s.direct.Load(); d != nil && d.w.tryWrite(f, s) {
		return true
	}
	s.queued.Add(1)
	return false
}

// took tells s that its writer has taken a frame from its channel.
func (s *Subscription) took() { s.queued.Add(-1) }

// fanoutItem is a frame for the subscribers a session had when it was
// delivered.
type fanoutItem struct {
	f    Frame
	subs []*Subscription
}

// fallback is a frame for the subscribers a fan-out could not write to:
// the hub sends it through their channels.
type fallback struct {
	topic string
	f     Frame
	subs  []*Subscription
}

// fanout writes one session's frames to its sockets, a wave at a time,
// on a goroutine of its own.
type fanout struct {
	h      *Hub
	topic  string
	mu     sync.Mutex
	queue  []fanoutItem
	closed bool
	wake   chan struct{}
}

// fanoutFor returns the topic's fan-out, started once the session has
// holdFrom viewers here; nil means deliver through the channels. A
// session keeps its fan-out until nobody here watches it (forgetHold).
func (st *hubState) fanoutFor(topic string) *fanout {
	if fo := st.fanouts[topic]; fo != nil {
		return fo
	}
	if len(st.subs[topic]) < holdFrom || !isSessionTopic(topic) {
		return nil
	}
	fo := &fanout{h: st.h, topic: topic, wake: make(chan struct{}, 1)}
	st.fanouts[topic] = fo
	st.h.running.Go(fo.run)
	return fo
}

// stopFanout ends the topic's fan-out once it has written what it has.
func (st *hubState) stopFanout(topic string) {
	if fo := st.fanouts[topic]; fo != nil {
		delete(st.fanouts, topic)
		fo.mu.Lock()
		fo.closed = true
		fo.mu.Unlock()
		fo.signal()
	}
}

// push queues f for the topic's current subscribers; it never blocks.
func (fo *fanout) push(f Frame, subs map[*Subscription]struct{}) {
	fo.mu.Lock()
	fo.queue = append(fo.queue, fanoutItem{f: f, subs: slices.Collect(maps.Keys(subs))})
	fo.mu.Unlock()
	fo.signal()
}

func (fo *fanout) signal() {
	select {
	case fo.wake <- struct{}{}:
	default:
	}
}

// run writes waves until the fan-out is stopped and has written all.
func (fo *fanout) run() {
	for {
		fo.mu.Lock()
		items, closed := fo.queue, fo.closed
		fo.queue = nil
		fo.mu.Unlock()
		for _, it := range mergeWaves(items) {
			if !fo.write(it) {
				return // the hub has stopped
			}
		}
		if closed {
			return
		}
		select {
		case <-fo.wake:
		case <-fo.h.done:
			return
		}
	}
}

// mergeWaves makes one wave of each run of consecutive event frames, as
// the hub's hold does, up to directMax bytes (a larger one could not be
// written straight to the sockets); a wave goes to the subscribers of its
// last frame (one that joined meanwhile skips or catches up what it has
// seen).
func mergeWaves(items []fanoutItem) []fanoutItem {
	var out []fanoutItem
	for i := 0; i < len(items); {
		j, size := i+1, len(items[i].f.Data)
		for j < len(items) && j-i < maxCoalesce && size+len(items[j].f.Data) <= directMax && mergeable(items[j-1].f, items[j].f) {
			size += len(items[j].f.Data)
			j++
		}
		if j == i+1 {
			out = append(out, items[i])
		} else {
			fs := make([]Frame, 0, j-i)
			for _, it := range items[i:j] {
				fs = append(fs, it.f)
			}
			out = append(out, fanoutItem{f: mergeFrames(fs), subs: items[j-1].subs})
		}
		i = j
	}
	return out
}

// mergeable says b may go out with a as one frame: both are events the
// hub could have held, and b follows a.
func mergeable(a, b Frame) bool {
	held := func(f Frame) bool { return f.Seq != 0 && f.Kind != runner.TypeInputRequested }
	return held(a) && held(b) && b.first() == a.Seq+1
}

// write writes one wave and hands what it could not write to the hub. It
// reports false once the hub has stopped.
func (fo *fanout) write(it fanoutItem) bool {
	parts := make([][]*Subscription, fanoutWorkers)
	var wg sync.WaitGroup
	for w := range fanoutWorkers {
		share := it.subs[w*len(it.subs)/fanoutWorkers : (w+1)*len(it.subs)/fanoutWorkers]
		wg.Go(func() {
			for i, s := range share {
				if !s.writeDirect(it.f) {
					parts[w] = append(parts[w], s)
				}
				if i%fanoutYield == fanoutYield-1 {
					runtime.Gosched() // let a run loop or the hub that woke run
				}
			}
		})
	}
	wg.Wait()
	failed := slices.Concat(parts...)
	if len(failed) == 0 {
		return true
	}
	select {
	case fo.h.fallback <- fallback{topic: fo.topic, f: it.f, subs: failed}:
		return true
	case <-fo.h.done:
		return false
	}
}

// sendFallback sends a frame a fan-out could not write through the
// channels of those still subscribed (their queued count already has it).
func (st *hubState) sendFallback(fb fallback) {
	set := st.subs[fb.topic]
	for _, s := range fb.subs {
		if _, ok := set[s]; !ok {
			continue // gone: its channel is closed
		}
		select {
		case s.c <- fb.f:
		default:
			st.drop(s)
		}
	}
}
