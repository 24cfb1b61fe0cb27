package server

import (
	"bytes"
	"context"
	"fmt"
	"html"
	"net"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"parley/runner"
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

// A session with more viewers here than holdFrom gets its stream in held,
// merged frames (hub_hold.go): every viewer shows every event once, in
// order, and the whole reply; so does one that joins mid-stream and
// catches up from the log meanwhile.
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

// In a session with a large audience, a socket that stops reading does
// not hold back the others: its frames wait for its own writer, and the
// hub drops it when too many wait (the page would reconnect and catch up
// from the log). A viewer that reads, however slowly, gets every frame,
// in order, also a 4 MB one.
func TestLargeAudienceOutlastsASocketThatStopsReading(t *testing.T) {
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
	url := "ws" + strings.TrimPrefix(e.web.URL, "http") + "/sessions/" + s.ID + "/ws"
	healthy := e.slowReader(url)
	// A small receive buffer, set before it connects, as a slow phone's.
	small := &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 64<<10)
		}); err != nil {
			return err
		}
		return serr
	}}
	stuck, _, err := (&websocket.Dialer{NetDialContext: small.DialContext}).Dial(url, e.header(e.user))
	if err != nil {
		t.Fatal(err)
	}
	defer stuck.Close()
	if err := stuck.WriteJSON(map[string]any{"action": "hello", "after": 0}); err != nil {
		t.Fatal(err)
	}
	// Both sockets watch once the hub has them.
	deadline := time.Now().Add(time.Minute)
	for watching := 0; watching < holdFrom+1; {
		n := make(chan int)
		hub.do(func(st *hubState) { n <- len(st.subs[s.ID]) })
		if watching = <-n; time.Now().After(deadline) {
			t.Fatalf("%d of %d viewers watching", watching, holdFrom+1)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// 22 MB: far more than the stuck socket's buffers hold. The last frame
	// is 4 MB: the viewer that reads slowly is not cut off for it.
	const frames = 1501
	for seq := int64(1); seq <= frames; seq++ {
		pad := strings.Repeat("x", 15<<10)
		if seq == frames {
			pad = strings.Repeat("x", 4<<20)
		}
		// Asks are neither held nor merged: each frame is a wave of its own.
		hub.Publish(s.ID, Frame{Seq: seq, Kind: runner.TypeInputRequested, Data: fmt.Appendf(nil, `<i id="last-seq" data-seq="%d"></i>%s`, seq, pad)})
		time.Sleep(time.Millisecond) // 15 MB/s: the slow viewer keeps up, just
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

// slowReader dials a viewer that reads all it is sent, but slowly, as a
// phone far away: 64 KiB every 2 ms.
func (e *env) slowReader(url string) *orderViewer {
	slow := func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		return slowConn{c}, err
	}
	d := websocket.Dialer{NetDialContext: slow, ReadBufferSize: 64 << 10}
	conn, _, err := d.Dial(url, e.header(e.user))
	if err != nil {
		e.t.Fatal(err)
	}
	if err := conn.WriteJSON(map[string]any{"action": "hello", "after": 0}); err != nil {
		e.t.Fatal(err)
	}
	o := &orderViewer{}
	v := &seqViewer{conn: conn, seen: map[int64]time.Time{}, done: make(chan struct{})}
	go func() {
		defer close(v.done)
		_ = o.read(v)
	}()
	e.t.Cleanup(v.close)
	o.socket = v
	return o
}

// slowConn pauses before each read.
type slowConn struct{ net.Conn }

func (c slowConn) Read(b []byte) (int, error) {
	time.Sleep(2 * time.Millisecond)
	return c.Conn.Read(b)
}
