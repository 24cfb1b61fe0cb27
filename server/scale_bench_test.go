//go:build bench

package server

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

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
