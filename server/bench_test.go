//go:build bench

package server

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"parley/runner/fakeapi"
	"parley/store"
)

// BenchmarkAskLatency measures the two latencies of an ask_user question
// through the whole stack (real claude CLI, ask_user server, broker, run
// loop, Postgres, hub, WebSocket):
//
//	(a) ask: an ask_user tools/call read by the ask_user server →
//	    the ask card frame (class="item ask") read by the browser's WebSocket;
//	(b) answer: the browser sending {"action":"answer",…} → the ask_user
//	    server writing the tool result.
//
// The ask_user server is, in sessions=N, the stdio transport: a `parley
// mcp-askuser` child that reads the call on its stdin, posts it to the
// relay's /ask and writes the result on its stdout; in transport=http/
// sessions=N, Parley's default: its own streamable-HTTP handler at the
// relay's /mcp-ask, called by the CLI directly. The ask_user server
// timestamps (a)'s start and (b)'s end (traceStdio in the child,
// traceMCPAsk around /mcp-ask); the WebSocket client timestamps the rest;
// all are wall-clock times of one machine. Both ends lean conservative: (a)
// ends when the client has read the frame, not when the server wrote it,
// and (b) starts before the client writes the answer.
//
// Each session runs one prompt of a fake model (PerTurn) that calls
// ask_user 1+asks times, then ends the turn. Every session's processes are
// started and its first ask shown before any is answered; that first ask is
// warm-up, reported in the log but not in the metrics. The ask counts are
// fixed per sub-benchmark whatever b.N is, so run it once:
//
//	PARLEY_CLAUDE_BIN=… go test -tags bench ./server/ -run '^$' -bench BenchmarkAskLatency -benchtime=1x -count=1 -timeout 40m
//
// or one transport: -bench 'BenchmarkAskLatency/sessions=(20|50)$' (stdio),
// -bench 'BenchmarkAskLatency/transport=http/sessions=(20|50)$' (http).
//
// It reports p50 and p99 in milliseconds as metrics, prints a table with
// p90, max and where the time went on stdout, and never judges the figures.
func BenchmarkAskLatency(b *testing.B) {
	cases := []struct{ sessions, asks int }{{1, 200}, {20, 10}, {benchInt("PARLEY_BENCH_ASK_SESSIONS", 50), 4}}
	for _, c := range cases {
		b.Run(fmt.Sprintf("sessions=%d", c.sessions), func(b *testing.B) {
			benchmarkAsks(b, c.sessions, c.asks, false)
		})
	}
	b.Run("transport=http", func(b *testing.B) { // Parley's default transport (bench_http_test.go)
		for _, c := range cases {
			b.Run(fmt.Sprintf("sessions=%d", c.sessions), func(b *testing.B) {
				benchmarkAsks(b, c.sessions, c.asks, true)
			})
		}
	})
}

// askScenario calls ask_user n times, then ends the turn.
func askScenario(n int) fakeapi.Scenario {
	q := map[string]any{
		"question": "Which colour?",
		"options":  []map[string]string{{"label": "Blue", "description": "Calm"}, {"label": "Green"}},
	}
	sc := make(fakeapi.Scenario, 0, n+1)
	for range n {
		sc = append(sc, fakeapi.Step{ToolName: askTool, ToolInput: q})
	}
	return append(sc, fakeapi.Step{Text: "All answered."})
}

// benchmarkAsks runs the benchmark over the stdio transport (a `parley
// mcp-askuser` child per run), or overHTTP over Parley's /mcp-ask.
func benchmarkAsks(b *testing.B, sessions, asks int, overHTTP bool) {
	traceDir := b.TempDir()
	o := envOptions{perTurn: true, quiet: true, askStdio: true, // traced by the mcp-askuser child
		env: []string{askTraceEnv + "=" + traceDir}}
	if overHTTP {
		o = envOptions{perTurn: true, quiet: true, relayWrap: traceMCPAsk(b, traceDir)} // traced at /mcp-ask
	}
	e := newEnv(b, askScenario(1+asks), o)

	clients := make([]*askClient, sessions)
	for i := range clients {
		clients[i] = e.dialAsker(e.newSession())
	}
	var warm sync.WaitGroup
	warm.Add(sessions)
	start := make(chan struct{})
	release := sync.OnceFunc(func() { close(start) })
	errc := make(chan error, sessions)
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Go(func() { errc <- c.run(&warm, start) })
	}
	defer wg.Wait()
	defer func() {
		for _, c := range clients {
			c.conn.Close() // ends the clients early if the benchmark failed
		}
		release()
	}()
	for _, c := range clients {
		c.prompt("answer my questions")
	}

	began := time.Now()
	warmed := make(chan struct{})
	go func() { warm.Wait(); close(warmed) }()
	select {
	case <-warmed:
	case err := <-errc:
		b.Fatalf("before every session asked: %v", err)
	case <-time.After(10 * time.Minute):
		b.Fatalf("not every session asked within 10 minutes")
	}
	b.Logf("%d sessions started and showed their first ask in %v", sessions, time.Since(began).Round(time.Millisecond))
	if overHTTP {
		if err := linkHTTPTraces(e, clients, traceDir); err != nil {
			b.Fatal(err)
		}
	}

	cpu0, cpuErr := readCPUTimes()
	b.ResetTimer()
	release()
	for range sessions {
		if err := <-errc; err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if cpu1, err := readCPUTimes(); err == nil && cpuErr == nil && cpu1.total > cpu0.total {
		busy := 100 * (1 - float64(cpu1.idle-cpu0.idle)/float64(cpu1.total-cpu0.total))
		b.ReportMetric(busy, "cpu-busy-%")
	}

	var first, measured []askTiming
	for _, c := range clients {
		ts, err := c.timings(b, e.st, traceDir)
		if err != nil {
			b.Fatal(err)
		}
		if len(ts) != 1+asks {
			b.Fatalf("session %s: %d asks traced, want %d", c.sess.ID, len(ts), 1+asks)
		}
		first, measured = append(first, ts[0]), append(measured, ts[1:]...)
	}
	reportLatencies(b, sessions, measured, first)
}

// askTiming is one ask's timestamps: t[0] tools/call read by mcp-askuser,
// t[1] the input row created (Postgres now() of the transaction), t[2] the
// ask card read by the browser, t[3] the answer sent by the browser, t[4]
// the input row answered (now() of that transaction), t[5] the tool result
// written by mcp-askuser.
type askTiming [6]time.Time

func (t askTiming) ask() time.Duration    { return t[2].Sub(t[0]) }
func (t askTiming) answer() time.Duration { return t[5].Sub(t[3]) }

// reportLatencies reports p50 and p99 of (a) and (b) as metrics and logs a
// table, with each split at the moment Postgres stamped the input row.
func reportLatencies(b *testing.B, sessions int, measured, warm []askTiming) {
	span := func(ts []askTiming, from, to int) []time.Duration {
		var l []time.Duration
		for _, t := range ts {
			l = append(l, t[to].Sub(t[from]))
		}
		slices.Sort(l)
		return l
	}
	latA, latB := span(measured, 0, 2), span(measured, 3, 5)
	warmA, warmB := span(warm, 0, 2), span(warm, 3, 5)
	b.ReportMetric(float64(len(latA)), "asks")
	b.ReportMetric(ms(percentile(latA, 50)), "ask-p50-ms")
	b.ReportMetric(ms(percentile(latA, 99)), "ask-p99-ms")
	b.ReportMetric(ms(percentile(latB, 50)), "answer-p50-ms")
	b.ReportMetric(ms(percentile(latB, 99)), "answer-p99-ms")
	var t strings.Builder
	transport := "stdio"
	if strings.Contains(b.Name(), "/transport=http/") {
		transport = "http"
	}
	fmt.Fprintf(&t, "sessions=%d, %s transport, %d asks measured (+%d warm-up), milliseconds:\n", sessions, transport, len(latA), len(warmA))
	fmt.Fprintf(&t, "  %-36s %8s %8s %8s %8s\n", "", "p50", "p90", "p99", "max")
	row := func(name string, l []time.Duration) {
		fmt.Fprintf(&t, "  %-36s %8.2f %8.2f %8.2f %8.2f\n", name,
			ms(percentile(l, 50)), ms(percentile(l, 90)), ms(percentile(l, 99)), ms(l[len(l)-1]))
	}
	row("(a) tools/call in → ask card on WS", latA)
	row("  in → input row created", span(measured, 0, 1))
	row("  input row created → card on WS", span(measured, 1, 2))
	row("(b) answer on WS → tool result out", latB)
	row("  answer sent → input row answered", span(measured, 3, 4))
	row("  input row answered → result out", span(measured, 4, 5))
	row("warm-up (a), first ask per session", warmA)
	row("warm-up (b), first ask per session", warmB)
	// To stdout: the testing package keeps only ten lines of a benchmark's log.
	fmt.Print(t.String())
}

// percentile is the nearest-rank p-th percentile of sorted l.
func percentile(l []time.Duration, p float64) time.Duration {
	i := int(math.Ceil(p/100*float64(len(l)))) - 1
	return l[max(i, 0)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// askClient is a lean browser tab for the benchmark: it timestamps each ask
// card as it is read and answers it at once, from its one reader goroutine.
type askClient struct {
	sess    store.Session
	conn    *websocket.Conn
	ids     []string    // the input id of each ask card
	cards   []time.Time // when each ask card was read
	answers []time.Time // when each answer was about to be sent
}

func (e *env) dialAsker(sess store.Session) *askClient {
	e.t.Helper()
	url := "ws" + strings.TrimPrefix(e.web.URL, "http") + "/sessions/" + sess.ID + "/ws"
	conn, _, err := websocket.DefaultDialer.Dial(url, e.header(e.user))
	if err != nil {
		e.t.Fatal(err)
	}
	c := &askClient{sess: sess, conn: conn}
	if err := c.send(map[string]any{"action": "hello", "after": 0}); err != nil {
		e.t.Fatal(err)
	}
	return c
}

func (c *askClient) send(v any) error {
	msg, _ := json.Marshal(v)
	return c.conn.WriteMessage(websocket.TextMessage, msg)
}

func (c *askClient) prompt(text string) {
	if err := c.send(map[string]any{"action": "prompt", "text": text}); err != nil {
		c.conn.Close() // run reports it
	}
}

// thinkTime is how long the simulated member takes to answer: 100–600 ms.
func thinkTime() time.Duration { return time.Duration(100+rand.IntN(500)) * time.Millisecond }

// run answers every ask card with "Blue" until the turn ends. The first card
// is answered only once warm is done and start closed.
func (c *askClient) run(warm *sync.WaitGroup, start <-chan struct{}) error {
	for {
		_, data, err := c.conn.ReadMessage()
		at := time.Now()
		if err != nil {
			return fmt.Errorf("session %s: websocket: %w", c.sess.ID, err)
		}
		f := string(data)
		switch {
		case strings.Contains(f, `class="item ask"`):
			id, ok := inputID(f)
			if !ok {
				return fmt.Errorf("session %s: ask card without an input id: %s", c.sess.ID, f)
			}
			c.ids, c.cards = append(c.ids, id), append(c.cards, at)
			if len(c.cards) == 1 {
				warm.Done()
				<-start
			}
			// A person reads the card before answering: without this think
			// time all sessions answer in the same instant and the benchmark
			// measures 20 CLIs contending for 2 cores in lockstep.
			time.Sleep(thinkTime())
			msg, _ := json.Marshal(map[string]any{"action": "answer", "input_id": id, "choice": "Blue"})
			sent := time.Now()
			if err := c.conn.WriteMessage(websocket.TextMessage, msg); err != nil {
				return fmt.Errorf("session %s: send answer: %w", c.sess.ID, err)
			}
			c.answers = append(c.answers, sent)
		case strings.Contains(f, "Done ·"):
			return nil
		case strings.Contains(f, "turn-result is-error"), strings.Contains(f, `class="toast`):
			return fmt.Errorf("session %s: %s", c.sess.ID, f)
		}
	}
}

// inputID reads the input id out of an ask card.
func inputID(card string) (string, bool) {
	const mark = `name="input_id" value="`
	_, rest, ok := strings.Cut(card, mark)
	if !ok {
		return "", false
	}
	id, _, ok := strings.Cut(rest, `"`)
	return id, ok
}

// timings pairs the session's i-th traced ask_user call with its i-th ask
// card, answer and input row.
func (c *askClient) timings(tb testing.TB, st *store.Store, traceDir string) ([]askTiming, error) {
	in, out, err := readTrace(filepath.Join(traceDir, c.sess.ClaudeSessionID+".trace"))
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", c.sess.ID, err)
	}
	if len(in) != len(c.cards) || len(in) != len(c.answers) {
		return nil, fmt.Errorf("session %s: %d calls traced, %d cards, %d answers",
			c.sess.ID, len(in), len(c.cards), len(c.answers))
	}
	var ts []askTiming
	for i, call := range in {
		done, ok := out[call.id]
		if !ok {
			return nil, fmt.Errorf("session %s: call %s has no traced result", c.sess.ID, call.id)
		}
		row, err := st.GetInput(tb.Context(), c.ids[i])
		if err != nil || row.AnsweredAt == nil {
			return nil, fmt.Errorf("session %s: input %s: %v (answered at %v)", c.sess.ID, c.ids[i], err, row.AnsweredAt)
		}
		t := askTiming{call.at, row.CreatedAt, c.cards[i], c.answers[i], *row.AnsweredAt, done}
		if t.ask() < 0 || t.answer() < 0 {
			return nil, fmt.Errorf("session %s: ask %d: negative latency (%v, %v): trace and cards do not pair",
				c.sess.ID, i, t.ask(), t.answer())
		}
		ts = append(ts, t)
	}
	return ts, nil
}

type tracedCall struct {
	id string
	at time.Time
}

// readTrace reads a trace file written by traceStdio.
func readTrace(path string) (in []tracedCall, out map[string]time.Time, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read ask trace: %w", err)
	}
	defer f.Close()
	out = map[string]time.Time{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 3 {
			return nil, nil, fmt.Errorf("ask trace line %q", sc.Text())
		}
		ns, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil {
			return nil, nil, fmt.Errorf("ask trace line %q: %w", sc.Text(), err)
		}
		at := time.Unix(0, ns)
		switch fields[0] {
		case "in":
			in = append(in, tracedCall{id: fields[2], at: at})
		case "out":
			out[fields[2]] = at
		default:
			return nil, nil, errors.New("ask trace line " + strconv.Quote(sc.Text()))
		}
	}
	return in, out, sc.Err()
}

// cpuTimes are the machine's cumulative CPU times, in clock ticks.
type cpuTimes struct{ idle, total uint64 }

// readCPUTimes reads the "cpu" line of /proc/stat (Linux only): user nice
// system idle iowait irq softirq steal…; idle counts idle and iowait.
func readCPUTimes() (cpuTimes, error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTimes{}, err
	}
	line, _, _ := strings.Cut(string(data), "\n")
	fields := strings.Fields(line)
	if len(fields) < 6 || fields[0] != "cpu" {
		return cpuTimes{}, errors.New("unexpected /proc/stat")
	}
	var t cpuTimes
	for i, f := range fields[1:] {
		n, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return cpuTimes{}, err
		}
		t.total += n
		if i == 3 || i == 4 {
			t.idle += n
		}
	}
	return t, nil
}
