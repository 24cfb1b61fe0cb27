package server

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/jackc/pgx/v5"

	"parley/runner/fakeapi"
	"parley/store"
)

// The scale benchmarks (run by scripts/bench.sh) print their figures on
// stdout as "figure: name = value unit" lines and never judge them.

func figure(name string, v float64, unit string) {
	fmt.Printf("figure: %s = %.6g %s\n", name, v, unit)
}

// benchInt reads a size from the environment, for a smaller run.
func benchInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// durable turns fsync and synchronous commit back on for the test cluster.
func durable(b *testing.B, dbURL string) {
	conn, err := pgx.Connect(b.Context(), dbURL)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, set := range []string{"fsync = on", "synchronous_commit = on", "full_page_writes = on"} {
		if _, err := conn.Exec(b.Context(), `ALTER SYSTEM SET `+set); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := conn.Exec(b.Context(), `SELECT pg_reload_conf()`); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), dbURL)
		if err != nil {
			return
		}
		defer conn.Close(context.Background())
		for _, set := range []string{"fsync = off", "synchronous_commit = off", "full_page_writes = off"} {
			_, _ = conn.Exec(context.Background(), `ALTER SYSTEM SET `+set)
		}
		_, _ = conn.Exec(context.Background(), `SELECT pg_reload_conf()`)
	})
}

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

// turnEnd waits until v has read the session's turn result and returns
// the log.
func (e *env) turnEnd(b *testing.B, v *seqViewer, sessionID string, timeout time.Duration) []store.Event {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		v.mu.Lock()
		ends := v.ends
		v.mu.Unlock()
		if ends > 0 {
			evs, err := e.st.EventsAfter(b.Context(), sessionID, 0, 0)
			if err != nil {
				b.Fatal(err)
			}
			return evs
		}
		time.Sleep(20 * time.Millisecond)
	}
	b.Fatalf("no result within %s", timeout)
	return nil
}

func words(n int) string {
	var sb strings.Builder
	for i := range n {
		fmt.Fprintf(&sb, "w%d ", i)
	}
	return strings.TrimSpace(sb.String())
}

// BenchmarkStreamThroughput streams one reply of 10,000 deltas through the
// real CLI and Parley on durable Postgres and reports the events stored
// per second and how long after the CLI's result a viewer had the end.
func BenchmarkStreamThroughput(b *testing.B) {
	n := benchInt("PARLEY_BENCH_DELTAS", 10000)
	e := newEnv(b, fakeapi.Scenario{{Text: words(n), Chunks: n}}, envOptions{quiet: true})
	durable(b, e.dbURL)
	s := e.newSession()
	v := e.seqViewer(s.ID, 0)
	w := e.dial(s.ID, 0)
	cpu0 := cpuTime()
	w.prompt("stream")
	evs := e.turnEnd(b, v, s.ID, 5*time.Minute)
	cpu := cpuTime() - cpu0
	result := evs[len(evs)-1]
	for _, ev := range evs {
		if ev.Type == "result" {
			result = ev
		}
	}
	v.waitSeq(b, result.Seq, time.Minute)
	var first time.Time
	count := 0
	for _, ev := range evs {
		if ev.Type == "stream_event" {
			if first.IsZero() {
				first = ev.CreatedAt
			}
			count++
		}
	}
	v.mu.Lock()
	shown := v.seen[result.Seq]
	v.mu.Unlock()
	span := shown.Sub(first)
	figure("stream events", float64(count), "events")
	figure("stream events stored and shown per second (durable)", float64(count)/span.Seconds(), "events/s")
	figure("CLI result → viewer has the end", ms(shown.Sub(result.CreatedAt)), "ms")
	figure("CPU of Parley's process (with the fake model and one viewer) per stream event", float64(cpu.Microseconds())/float64(count), "µs")
}

// BenchmarkCLIAlone runs the real CLI on BenchmarkStreamThroughput's reply
// with nothing but a pipe reader behind it: how fast the CLI itself emits
// stream events here, the ceiling for any program that reads it.
func BenchmarkCLIAlone(b *testing.B) {
	n := benchInt("PARLEY_BENCH_DELTAS", 10000)
	fake := fakeapi.Serve(b, fakeapi.Scenario{{Text: words(n), Chunks: n}})
	dir := b.TempDir()
	cmd := exec.CommandContext(b.Context(), fakeapi.ClaudeBin(b), "-p", "--output-format", "stream-json",
		"--verbose", "--include-partial-messages", "stream")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), fake.Env(dir)...)
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 16<<20)
	var first, last time.Time
	count := 0
	for sc.Scan() {
		if bytes.HasPrefix(sc.Bytes(), []byte(`{"type":"stream_event"`)) {
			last = time.Now()
			if count == 0 {
				first = last
			}
			count++
		}
	}
	if err := sc.Err(); err != nil {
		b.Fatalf("read claude's output: %v", err) // the context ends claude at cleanup
	}
	if err := cmd.Wait(); err != nil || count < 2 {
		b.Fatalf("claude: %v, %d stream events", err, count)
	}
	figure("CLI alone: stream events", float64(count), "events")
	figure("CLI alone: stream events emitted per second", float64(count-1)/last.Sub(first).Seconds(), "events/s")
}

// fakeCLI writes a stand-in for claude that prints n streamed text deltas
// (the CLI's own line format), a result, then waits on stdin: it measures
// Parley's side of the pipe, which the real CLI on this machine cannot fill.
func fakeCLI(b *testing.B, n int) string {
	dir := b.TempDir()
	var sb strings.Builder
	sb.WriteString(`{"type":"system","subtype":"init","session_id":"s","model":"fake"}` + "\n")
	sb.WriteString(`{"type":"stream_event","event":{"type":"message_start","message":{"id":"msg_bench"}},"parent_tool_use_id":null}` + "\n")
	for i := range n {
		fmt.Fprintf(&sb, `{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"w%d "}},"parent_tool_use_id":null,"session_id":"s","uuid":"u%d"}`+"\n", i, i)
	}
	sb.WriteString(`{"type":"result","subtype":"success","is_error":false,"num_turns":1,"total_cost_usd":0,"result":"done"}` + "\n")
	lines := dir + "/lines.ndjson"
	if err := os.WriteFile(lines, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	bin := dir + "/claude"
	script := "#!/bin/sh\ncat '" + lines + "'\nexec cat >/dev/null\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		b.Fatal(err)
	}
	return bin
}

// BenchmarkRunLoopThroughput feeds one session's run loop as fast as a pipe
// can (fakeCLI) on durable Postgres: events stored and shown per second.
func BenchmarkRunLoopThroughput(b *testing.B) {
	n := benchInt("PARLEY_BENCH_DELTAS", 10000)
	b.Setenv("PARLEY_CLAUDE_BIN", fakeCLI(b, n))
	e := newEnv(b, nil, envOptions{quiet: true, askUserOff: true})
	durable(b, e.dbURL)
	s := e.newSession()
	v := e.seqViewer(s.ID, 0)
	w := e.dial(s.ID, 0)
	w.prompt("go")
	evs := e.turnEnd(b, v, s.ID, 5*time.Minute)
	last := evs[len(evs)-1]
	v.waitSeq(b, last.Seq, time.Minute)
	var first store.Event
	for _, ev := range evs {
		if ev.Type == "stream_event" {
			first = ev
			break
		}
	}
	v.mu.Lock()
	shown := v.seen[last.Seq]
	v.mu.Unlock()
	figure("run loop: events stored per second (durable)", float64(n)/last.CreatedAt.Sub(first.CreatedAt).Seconds(), "events/s")
	figure("run loop: events stored and shown per second (durable)", float64(n)/shown.Sub(first.CreatedAt).Seconds(), "events/s")
}
