package server

import (
	"bytes"
	"fmt"
	"html"
	"net"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"parley/runner/fakeapi"
)

// orderViewer is what one socket showed: its seq marks must only grow.
type orderViewer struct {
	mu     sync.Mutex
	last   int64
	ends   int
	text   strings.Builder // the streamed text deltas, in order
	err    error
	socket *seqViewer
}

var deltaFragment = regexp.MustCompile(`<div hx-swap-oob="beforeend:#events \.live \.body">([^<]*)</div>`)

// read records every message of the socket until it fails.
func (o *orderViewer) read(v *seqViewer) error {
	for {
		_, msg, err := v.conn.ReadMessage()
		if err != nil {
			return err
		}
		o.mu.Lock()
		seqsIn(msg, func(seq int64) {
			if seq <= o.last && o.err == nil {
				o.err = fmt.Errorf("seq %d shown after seq %d", seq, o.last)
			}
			o.last = max(o.last, seq)
		})
		for _, m := range deltaFragment.FindAllSubmatch(msg, -1) {
			o.text.WriteString(html.UnescapeString(string(m[1])))
		}
		o.ends += bytes.Count(msg, turnResultMark)
		o.mu.Unlock()
	}
}

// watch dials a viewer of the session that has read up to after.
func (e *env) orderViewer(sessionID string, after int64) *orderViewer {
	o := &orderViewer{}
	v, err := dialViewer(e.web.URL, sessionID, e.header(e.user), after, o.read, false)
	if err != nil {
		e.t.Fatalf("dial: %v", err)
	}
	e.t.Cleanup(v.close)
	o.socket = v
	return o
}

// state returns what the viewer has shown.
func (o *orderViewer) state() (last int64, ends int, text string, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.last, o.ends, o.text.String(), o.err
}

// A session with more viewers here than holdFrom streams through its
// fan-out (hub_fanout.go), straight to the sockets: every viewer shows
// every event once, in order, and the whole reply; so does one that joins
// mid-stream and catches up from the log meanwhile.
func TestLargeAudienceSeesTheStreamOnceInOrder(t *testing.T) {
	const chunks = 300
	reply := words(chunks)
	e := newEnv(t, fakeapi.Scenario{{Text: reply, Chunks: chunks, ChunkDelay: 3 * time.Millisecond}},
		envOptions{quiet: true, askUserOff: true})
	s := e.newSession()
	vs := make([]*orderViewer, holdFrom+10)
	var wg sync.WaitGroup
	for i := range vs {
		wg.Go(func() { vs[i] = e.orderViewer(s.ID, 0) })
	}
	wg.Wait()
	e.dial(s.ID, 0).prompt("stream")
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if last, _, _, _ := vs[0].state(); last >= 20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the stream did not start")
		}
		time.Sleep(5 * time.Millisecond)
	}
	late := e.orderViewer(s.ID, 0)
	vs = append(vs, late)
	for i, o := range vs {
		for {
			if _, ends, _, _ := o.state(); ends > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("viewer %d did not see the turn end", i)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	evs, err := e.st.EventsAfter(t.Context(), s.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	end := evs[len(evs)-1].Seq
	for i, o := range vs {
		for {
			last, _, text, err := o.state()
			if err != nil {
				t.Fatalf("viewer %d: %v", i, err)
			}
			if last == end {
				if o != late && text != reply {
					t.Fatalf("viewer %d showed the reply as %q, want %q", i, text, reply)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("viewer %d: last seq %d, want %d", i, last, end)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// A socket that stops reading while its session's fan-out writes to it is
// closed once its buffers are full, instead of holding back the wave: the
// other viewers get every frame, in order, and the stuck page would
// reconnect and catch up from the log.
func TestFanoutClosesASocketThatStopsReading(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "unused"}}, envOptions{quiet: true, askUserOff: true})
	s := e.newSession()
	hub := e.srv.hub
	for range holdFrom - 1 { // viewers without a socket of their own, read as fast as they come
		sub, err := hub.Subscribe(t.Context(), s.ID)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { hub.Unsubscribe(sub) })
		go func() {
			for range sub.C {
			}
		}()
	}
	healthy := e.orderViewer(s.ID, 0)
	url := "ws" + strings.TrimPrefix(e.web.URL, "http") + "/sessions/" + s.ID + "/ws"
	stuck, _, err := websocket.DefaultDialer.Dial(url, e.header(e.user))
	if err != nil {
		t.Fatal(err)
	}
	defer stuck.Close()
	if err := stuck.WriteJSON(map[string]any{"action": "hello", "after": 0}); err != nil {
		t.Fatal(err)
	}
	// Both sockets are caught up and live once the fan-out may write to them.
	deadline := time.Now().Add(time.Minute)
	for live := 0; live < 2; {
		n := make(chan int)
		hub.do(func(st *hubState) {
			c := 0
			for sub := range st.subs[s.ID] {
				if sub.direct.Load() != nil {
					c++
				}
			}
			n <- c
		})
		if live = <-n; time.Now().After(deadline) {
			t.Fatalf("%d of 2 sockets live", live)
		}
		time.Sleep(5 * time.Millisecond)
	}
	const frames = 400
	pad := strings.Repeat("x", 64<<10)
	for seq := int64(1); seq <= frames; seq++ {
		hub.Publish(s.ID, Frame{Seq: seq, Data: fmt.Appendf(nil, `<i id="last-seq" data-seq="%d"></i>%s`, seq, pad)})
	}
	for {
		last, _, _, err := healthy.state()
		if err != nil {
			t.Fatal(err)
		}
		if last == frames {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the viewer that reads: last seq %d of %d", last, frames)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The stuck page reads at last: what its buffers held, then the end.
	stuck.SetReadDeadline(time.Now().Add(time.Minute))
	var got int64
	for {
		_, msg, err := stuck.ReadMessage()
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("the stuck socket is still open after %d frames", got)
			}
			break
		}
		seqsIn(msg, func(seq int64) { got = max(got, seq) })
	}
	if got >= frames {
		t.Fatalf("the stuck socket got all %d frames: it was never cut off", got)
	}
}
