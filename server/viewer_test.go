package server

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"parley/store"
)

// The viewers here are WebSocket clients that note which seqs they read
// and when: the audience tests use them, and so do the benchmarks (built
// with -tags bench), whose viewer farm reads with them too.

// seqMark precedes the seq in the page's last-seq fragment.
var seqMark = []byte(`id="last-seq" data-seq="`)

// seqsIn calls f with each last-seq of a message, without a regexp or a
// copy: a thousand viewers share the benchmark's two cores with the server.
func seqsIn(b []byte, f func(int64)) {
	for {
		i := bytes.Index(b, seqMark)
		if i < 0 {
			return
		}
		b = b[i+len(seqMark):]
		var n int64
		for len(b) > 0 && b[0] >= '0' && b[0] <= '9' {
			n, b = n*10+int64(b[0]-'0'), b[1:]
		}
		f(n)
	}
}

var turnResultMark = []byte(`class="item turn-result"`)

// seqViewer is a WebSocket client that stamps when each seq arrived.
type seqViewer struct {
	conn *websocket.Conn
	mu   sync.Mutex
	seen map[int64]time.Time
	last int64
	ends int // turn results read
	done chan struct{}
	// every stamps each seq a message brings, not only the last-seq mark
	// it carries: a frame of merged deltas marks only its last seq, and
	// the deltas before it waited longer. The viewer farm sets it; a join
	// storm's thousand replays of 15,000 events would not fit in memory.
	every bool
	at    []int64 // with every: when seq i was read, in Unix nanoseconds (at[0] unused)
	// arr is, with every, when the bytes that brought seq i reached the
	// viewer's socket (the kernel's receive time; arrivalReader), or at[i]
	// where the kernel did not say.
	arr []int64
}

func (e *env) seqViewer(sessionID string, after int64) *seqViewer {
	v, err := dialSeqViewer(e.web.URL, sessionID, e.header(e.user), after)
	if err != nil {
		e.t.Fatalf("dial: %v", err)
	}
	e.t.Cleanup(v.close)
	return v
}

// dialViewer opens the session's socket on the server at base, says hello
// (the viewer has read up to after) and reads with read until it fails.
func dialViewer(base, sessionID string, h http.Header, after int64, read func(*seqViewer) error, every bool) (*seqViewer, error) {
	return dialViewerWith(websocket.Dialer{HandshakeTimeout: 60 * time.Second}, base, sessionID, h, after, read, every)
}

// dialViewerWith is dialViewer through d (a slow or small-buffered client).
func dialViewerWith(d websocket.Dialer, base, sessionID string, h http.Header, after int64, read func(*seqViewer) error, every bool) (*seqViewer, error) {
	url := "ws" + strings.TrimPrefix(base, "http") + "/sessions/" + sessionID + "/ws"
	conn, _, err := d.Dial(url, h)
	if err != nil {
		return nil, err
	}
	if err := conn.WriteJSON(map[string]any{"action": "hello", "after": after}); err != nil {
		conn.Close()
		return nil, err
	}
	v := &seqViewer{conn: conn, seen: map[int64]time.Time{}, done: make(chan struct{}), every: every}
	if every {
		v.at, v.arr = make([]int64, 1, 4096), make([]int64, 1, 4096)
	}
	go func() {
		defer close(v.done)
		_ = read(v)
	}()
	return v, nil
}

// dialSeqViewer opens a viewer of the session on the server at base.
func dialSeqViewer(base, sessionID string, h http.Header, after int64) (*seqViewer, error) {
	return dialViewer(base, sessionID, h, after, (*seqViewer).readMessages, false)
}

// readMessages reads the socket a message at a time, as gorilla's client.
func (v *seqViewer) readMessages() error {
	var buf bytes.Buffer // reused: one read costs no allocation
	for {
		_, r, err := v.conn.NextReader()
		if err != nil {
			return err
		}
		buf.Reset()
		if _, err := buf.ReadFrom(r); err != nil {
			return err
		}
		now := time.Now()
		v.record(buf.Bytes(), now, now)
	}
}

// record notes the seqs and turn ends a message read at now shows; its
// bytes reached the socket at arrived.
func (v *seqViewer) record(msg []byte, now, arrived time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.ends += bytes.Count(msg, turnResultMark)
	seqsIn(msg, func(seq int64) {
		if v.every {
			// The socket is gapless and in order: this message brought
			// every seq up to this one. Kept in a slice: no map to grow.
			for int64(len(v.at)) <= seq {
				v.at = append(v.at, now.UnixNano())
				v.arr = append(v.arr, arrived.UnixNano())
			}
		} else if _, ok := v.seen[seq]; !ok {
			v.seen[seq] = now
		}
		v.last = max(v.last, seq)
	})
}

// close ends the viewer's connection and waits for its reader.
func (v *seqViewer) close() { v.conn.Close(); <-v.done }

// waitSeq waits until the viewer has seen seq.
func (v *seqViewer) waitSeq(tb testing.TB, seq int64, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		v.mu.Lock()
		last := v.last
		v.mu.Unlock()
		if last >= seq {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	tb.Fatalf("viewer did not see seq %d within %s", seq, timeout)
}

// latencies returns, for each event of evs the viewer saw, the time from
// the event being recorded to the viewer reading it.
func (v *seqViewer) latencies(evs []store.Event) []time.Duration {
	v.mu.Lock()
	defer v.mu.Unlock()
	var l []time.Duration
	for _, ev := range evs {
		if at, ok := v.seen[ev.Seq]; ok {
			l = append(l, at.Sub(ev.CreatedAt))
		}
	}
	return l
}

// words is a reply of n numbered words ("w0 w1 …"), for a stream of n deltas.
func words(n int) string {
	var sb strings.Builder
	for i := range n {
		fmt.Fprintf(&sb, "w%d ", i)
	}
	return strings.TrimSpace(sb.String())
}
