//go:build bench

package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"parley/runner/fakeapi"
	"parley/store"
)

// pctl reports p50, p99 and max of l in milliseconds under name.
func pctl(name string, l []time.Duration) {
	if len(l) == 0 {
		figure(name+" (no samples)", 0, "")
		return
	}
	slices.Sort(l)
	figure(name+" p50", ms(percentile(l, 50)), "ms")
	figure(name+" p99", ms(percentile(l, 99)), "ms")
	figure(name+" max", ms(l[len(l)-1]), "ms")
}

// viewers dials n viewers on the session, hello after seq after.
func (e *env) viewers(sessionID string, n int, after int64) []*seqViewer {
	vs := make([]*seqViewer, n)
	var wg sync.WaitGroup
	for i := range vs {
		wg.Go(func() { vs[i] = e.seqViewer(sessionID, after) })
	}
	wg.Wait()
	return vs
}

// cpuTime is the user and system CPU this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkFanout streams a 500-delta reply to 200 and to 1,000 viewers of
// one session: event recorded → frame read by each viewer and → its bytes at
// the viewer's socket (the kernel's receive time stamp, which a browser on
// a machine of its own would see, without the farm's wait for a core), and
// the whole way, model sent the delta → viewer (and → event recorded). The
// viewers run in a process of their own (viewerfarm_test.go), as browsers
// do; the benchmark's own socket, which sees the turn end, is one more.
// The viewers share the machine's cores with the server.
func BenchmarkFanout(b *testing.B) {
	for _, n := range []int{200, benchInt("PARLEY_BENCH_VIEWERS", 1000)} {
		b.Run(fmt.Sprintf("viewers=%d", n), func(b *testing.B) { fanout(b, n, fmt.Sprintf("fan-out to %d viewers", n)) })
	}
}

// fanout streams the reply to n viewers and reports the figures under what.
func fanout(b *testing.B, n int, what string) {
	const deltas = 500
	var mu sync.Mutex
	sent := make([]time.Time, deltas)
	e := newEnv(b, fakeapi.Scenario{{Text: words(deltas), Chunks: deltas, ChunkDelay: 2 * time.Millisecond,
		Sent: func(i int, at time.Time) { mu.Lock(); sent[i] = at; mu.Unlock() }}},
		envOptions{quiet: true, askUserOff: true, stampPublish: true})
	s := e.newSession()
	// The viewers watch, they are not joining (BenchmarkJoinStorm is
	// that): each has read an earlier turn before the stream.
	const earlier = 4
	seedLog(b, e.st, s.ID, earlier)
	farm := e.viewerFarm(b, s.ID, n, earlier)
	watch := e.seqViewer(s.ID, earlier)
	w := e.dial(s.ID, 0)
	runtime.GC()
	cpu0 := cpuTime()
	stopProfile := streamProfile(b, n)
	w.prompt("stream")
	evs := e.turnEnd(b, watch, s.ID, 5*time.Minute)[earlier:]
	mu.Lock()
	bySeq := sentBySeq(b, evs, sent)
	mu.Unlock()
	r := farm.wait(b, evs[len(evs)-1].Seq, evs, bySeq, e.published.stamps())
	stopProfile()
	// CPU, unlike latency, hardly depends on what else the machine runs.
	figure(what+", CPU of the server per event", float64((r.ownCPU-cpu0).Microseconds())/float64(len(evs)), "µs")
	figure(what+", CPU of the viewers per event", float64(r.farmCPU.Microseconds())/float64(len(evs)), "µs")
	pctl(what+", event recorded → viewer", r.read)
	// The same to the moment the frame's bytes reached the viewer's
	// socket: without the farm's own wait to read a thousand sockets on
	// the cores it shares with the server.
	pctl(what+", event recorded → frame at the viewer's socket", r.arrived)
	// The fan-out alone: from the run loop publishing the written batch to
	// the viewer's socket.
	pctl(what+", event published → frame at the viewer's socket", r.published)
	// The whole way: the model's chunk through the CLI, the run loop, the
	// commit and the wave (a run's CPU priority shows here).
	pctl(what+", model sent the delta → viewer", r.fromModel)
	var toLog []time.Duration // the CLI and the run loop's read, no fan-out
	for _, ev := range evs {
		if at, ok := bySeq[ev.Seq]; ok {
			toLog = append(toLog, ev.CreatedAt.Sub(at))
		}
	}
	pctl(what+", model sent the delta → event recorded", toLog)
}

// sentBySeq maps the seq of each text delta in evs (the CLI prints one
// stream_event per chunk of the model's, in order) to when the fake model
// sent that chunk.
func sentBySeq(b *testing.B, evs []store.Event, sent []time.Time) map[int64]time.Time {
	m := map[int64]time.Time{}
	for _, ev := range evs {
		if ev.Type == "stream_event" && bytes.Contains(ev.Payload, []byte(`"text_delta"`)) {
			if len(m) == len(sent) {
				b.Fatalf("more text deltas in the log than the model's %d chunks", len(sent))
			}
			m[ev.Seq] = sent[len(m)]
		}
	}
	if len(m) != len(sent) {
		b.Fatalf("%d text deltas in the log for the model's %d chunks", len(m), len(sent))
	}
	return m
}

// streamProfile profiles the server's CPU while the stream fans out, to
// the file PARLEY_BENCH_STREAM_PROFILE names (with the viewer count
// appended), if it is set; the returned func stops it.
func streamProfile(b *testing.B, n int) func() {
	name := os.Getenv("PARLEY_BENCH_STREAM_PROFILE")
	if name == "" {
		return func() {}
	}
	f, err := os.Create(fmt.Sprintf("%s.%d", name, n))
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() { pprof.StopCPUProfile(); _ = f.Close() }
}

// seedLog writes a long transcript of n events straight into the log:
// turns of a prompt, streamed deltas, the completed message and a result.
func seedLog(b *testing.B, st *store.Store, sessionID string, n int) {
	var evs []store.Event
	seq := int64(0)
	add := func(typ string, v any) {
		seq++
		p, _ := json.Marshal(v)
		evs = append(evs, store.Event{SessionID: sessionID, Seq: seq, Type: typ, Payload: p, CreatedAt: time.Now()})
	}
	for turn := 0; seq < int64(n); turn++ {
		id := fmt.Sprintf("msg_seed_%d", turn)
		add("prompt", map[string]any{"text": fmt.Sprintf("question %d", turn), "by": "you"})
		add("stream_event", map[string]any{"event": map[string]any{"type": "message_start", "message": map[string]any{"id": id}}})
		for i := 0; i < 95 && seq < int64(n)-3; i++ {
			add("stream_event", map[string]any{"event": map[string]any{"type": "content_block_delta",
				"delta": map[string]any{"type": "text_delta", "text": fmt.Sprintf("word%d ", i)}}})
		}
		add("assistant", map[string]any{"message": map[string]any{"id": id,
			"content": []map[string]any{{"type": "text", "text": "The **answer** to question " + fmt.Sprint(turn)}}}})
		add("result", map[string]any{"subtype": "success", "num_turns": 1, "total_cost_usd": 0.001})
	}
	for i := 0; i < len(evs); i += 1000 {
		if err := st.AppendEvents(b.Context(), evs[i:min(i+1000, len(evs))]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkJoinStorm opens a 15,000-event session in 1,000 viewers at once
// while another session streams: how much the storm delays the live stream
// (event recorded → frame read by its viewer), and the server's heap.
func BenchmarkJoinStorm(b *testing.B) {
	joiners := benchInt("PARLEY_BENCH_STORM", 1000)
	logSize := benchInt("PARLEY_BENCH_LOG", 15000)
	e := newEnv(b, fakeapi.Scenario{{Text: words(1500), Chunks: 1500, ChunkDelay: 5 * time.Millisecond}},
		envOptions{quiet: true, askUserOff: true})
	big := e.newSession()
	seedLog(b, e.st, big.ID, logSize)
	live := e.newSession()
	lv := e.seqViewer(live.ID, 0)
	w := e.dial(live.ID, 0)
	w.prompt("stream")
	// Let the stream start, then storm.
	for {
		lv.mu.Lock()
		n := len(lv.seen)
		lv.mu.Unlock()
		if n > 20 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	var peak uint64
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Go(func() {
		var m runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
				runtime.ReadMemStats(&m)
				peak = max(peak, m.HeapInuse)
			}
		}
	})
	stormStart := time.Now()
	vs := e.viewers(big.ID, joiners, 0)
	for _, v := range vs {
		v.waitSeq(b, int64(logSize), 10*time.Minute)
	}
	stormEnd := time.Now()
	close(stop)
	sampler.Wait()
	evs := e.turnEnd(b, lv, live.ID, 5*time.Minute)
	var during []store.Event
	for _, ev := range evs {
		if !ev.CreatedAt.Before(stormStart) && ev.CreatedAt.Before(stormEnd) {
			during = append(during, ev)
		}
	}
	figure(fmt.Sprintf("join storm: %d viewers × %d events replayed in", joiners, logSize), stormEnd.Sub(stormStart).Seconds(), "s")
	figure("join storm: live events during the storm", float64(len(during)), "events")
	pctl("join storm: other session's live event recorded → viewer", lv.latencies(during))
	figure("join storm: server heap in use, peak", float64(peak)/(1<<20), "MiB")
}
