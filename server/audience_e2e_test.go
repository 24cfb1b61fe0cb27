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

	"parley/hub"
	"parley/runner"
	"parley/runner/fakeapi"
)

// orderViewer is what one socket showed: its seq marks must only grow.
type orderViewer struct {
	mu   sync.Mutex
	last int64
	ends int
	text strings.Builder // the streamed text deltas, in order
	err  error
}

var deltaFragment = regexp.MustCompile(`<div hx-swap-oob="beforeend:#m-[A-Za-z0-9_-]+ \.body">([^<]*)</div>`)

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

// orderViewer dials a viewer of the session through d, from its start.
func (e *env) orderViewer(d websocket.Dialer, sessionID string) *orderViewer {
	o := &orderViewer{}
	v, err := dialViewerWith(d, e.web.URL, sessionID, e.header(e.user), 0, o.read, false)
	if err != nil {
		e.t.Fatalf("dial: %v", err)
	}
	e.t.Cleanup(v.close)
	return o
}

// state returns what the viewer has shown.
func (o *orderViewer) state() (last int64, ends int, text string, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.last, o.ends, o.text.String(), o.err
}

// A session with more viewers here than hub.HoldFrom gets its stream in held,
// merged frames (hub/hold.go): every viewer shows every event once, in
// order, and the whole reply; so does one that joins mid-stream and
// catches up from the log meanwhile.
func TestLargeAudienceSeesTheStreamOnceInOrder(t *testing.T) {
	const chunks = 300
	reply := words(chunks)
	e := newEnv(t, fakeapi.Scenario{{Text: reply, Chunks: chunks, ChunkDelay: 3 * time.Millisecond}},
		envOptions{quiet: true, askUserOff: true})
	s := e.newSession()
	vs := make([]*orderViewer, hub.HoldFrom+10)
	var wg sync.WaitGroup
	for i := range vs {
		wg.Go(func() { vs[i] = e.orderViewer(websocket.Dialer{}, s.ID) })
	}
	wg.Wait()
	e.dial(s.ID, 0).prompt("stream")
	waitUntil(t, 2*time.Minute, "the stream to start", func() bool { last, _, _, _ := vs[0].state(); return last >= 20 })
	late := e.orderViewer(websocket.Dialer{}, s.ID)
	vs = append(vs, late)
	for i, o := range vs {
		waitUntil(t, 2*time.Minute, fmt.Sprintf("viewer %d to see the turn end", i), func() bool { _, ends, _, _ := o.state(); return ends > 0 })
	}
	evs, err := e.st.EventsAfter(t.Context(), s.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	end := evs[len(evs)-1].Seq
	for i, o := range vs {
		waitUntil(t, 2*time.Minute, fmt.Sprintf("viewer %d to show seq %d", i, end), func() bool {
			last, _, _, err := o.state()
			return last == end || err != nil
		})
		if _, _, text, err := o.state(); err != nil {
			t.Fatalf("viewer %d: %v", i, err)
		} else if o != late && text != reply {
			t.Fatalf("viewer %d showed the reply as %q, want %q", i, text, reply)
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
	h := e.srv.hub
	for range hub.HoldFrom - 1 { // viewers without a socket of their own, read as fast as they come
		sub, err := h.Subscribe(t.Context(), s.ID)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Unsubscribe(sub) })
		go func() {
			for range sub.C {
			}
		}()
	}
	// A viewer that reads all it is sent, but slowly, as a phone far away:
	// 64 KiB every 2 ms.
	slow := func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		return slowConn{c}, err
	}
	healthy := e.orderViewer(websocket.Dialer{NetDialContext: slow, ReadBufferSize: 64 << 10}, s.ID)
	// One that reads nothing until the end, with a small receive buffer set
	// before it connects.
	small := &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 64<<10)
		}); err != nil {
			return err
		}
		return serr
	}}
	noReader := func(*seqViewer) error { return nil }
	sv, err := dialViewerWith(websocket.Dialer{NetDialContext: small.DialContext}, e.web.URL, s.ID, e.header(e.user), 0, noReader, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sv.close)
	stuck := sv.conn
	// Both sockets watch once the hub has them.
	waitUntil(t, time.Minute, fmt.Sprintf("%d viewers watching", hub.HoldFrom+1), func() bool {
		return h.Subscribers(s.ID) >= hub.HoldFrom+1
	})
	// 22 MB: far more than the stuck socket's buffers hold. The last frame
	// is 4 MB: the viewer that reads slowly is not cut off for it.
	const frames = 1501
	for seq := int64(1); seq <= frames; seq++ {
		pad := strings.Repeat("x", 15<<10)
		if seq == frames {
			pad = strings.Repeat("x", 4<<20)
		}
		// Asks are neither held nor merged: each frame is a wave of its own.
		h.Publish(s.ID, hub.Frame{Seq: seq, Kind: runner.TypeInputRequested, Data: fmt.Appendf(nil, `<i id="last-seq" data-seq="%d"></i>%s`, seq, pad)})
		time.Sleep(time.Millisecond) // 15 MB/s: the slow viewer keeps up, just
	}
	waitUntil(t, time.Minute, fmt.Sprintf("the viewer that reads to show seq %d", frames), func() bool {
		last, _, _, err := healthy.state()
		return last == frames || err != nil
	})
	if _, _, _, err := healthy.state(); err != nil {
		t.Fatal(err)
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

// slowConn pauses before each read.
type slowConn struct{ net.Conn }

func (c slowConn) Read(b []byte) (int, error) {
	time.Sleep(2 * time.Millisecond)
	return c.Conn.Read(b)
}
