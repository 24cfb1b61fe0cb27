package server

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"parley/metrics"
	"parley/runner/fakeapi"
)

// TestOpsAskMetricsAndLog: what an operator sees of one real ask, asked by
// the real CLI's ask_user and answered from the page. /metrics, scraped
// before and after, counts the ask opened and answered and observes its
// two latencies, and the log holds its lifecycle (opened, answered,
// delivered) with the ids that tie the lines together.
func TestOpsAskMetricsAndLog(t *testing.T) {
	var log syncBuffer
	met := metrics.New(nil, nil)
	e := newEnv(t, fakeapi.Scenario{
		{Text: "Let me ask.", ToolName: askTool, ToolInput: colourQuestion(false)},
		{Text: "You chose: " + fakeapi.ToolResultPlaceholder},
	}, envOptions{metrics: met, logTo: &log})
	before := e.scrape()
	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt("pick a colour")
	in := e.waitInput(w, s.ID)
	w.answer(in, map[string]any{"choice": "Blue"})
	w.waitFor(60*time.Second, "You chose: User selected: Blue", "Done ·")

	after := e.scrape()
	for _, m := range []struct {
		name string
		want float64
	}{
		{`parley_asks_opened_total{kind="question"}`, 1},
		{`parley_asks_resolved_total{kind="question",outcome="answered"}`, 1},
		{`parley_ask_to_browser_seconds_count`, 1},
		{`parley_answer_to_tool_result_seconds_count`, 1},
	} {
		if got := after[m.name] - before[m.name]; got != m.want {
			t.Errorf("%s moved by %v, want %v", m.name, got, m.want)
		}
	}
	if after["parley_events_written_total"] <= before["parley_events_written_total"] {
		t.Errorf("parley_events_written_total did not move: %v → %v", before["parley_events_written_total"], after["parley_events_written_total"])
	}

	id := "input_id=" + in.ID
	for _, l := range []struct {
		msg  string
		keys []string
	}{
		{"ask opened", []string{id, "session_id=" + s.ID, "kind=question", "source=", "tool=", "timeout_seconds="}},
		{"ask answered", []string{id, "session_id=" + s.ID, "kind=question", "status=answered", "by=", "detached=false"}},
		{"answer delivered", []string{id, "session_id=" + s.ID, "how=tool_result"}},
	} {
		line := waitLogLine(t, &log, `msg="`+l.msg+`"`, id)
		for _, k := range l.keys {
			if !strings.Contains(line, " "+k) {
				t.Errorf("log line %q lacks %q", line, k)
			}
		}
	}
}

// scrape reads /metrics as Parley's own uid does (no token needed) into
// series → value.
func (e *env) scrape() map[string]float64 {
	e.t.Helper()
	resp, err := http.Get(e.web.URL + "/metrics")
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("GET /metrics: %s", resp.Status)
	}
	series := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, v, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(name, "#") {
			continue
		}
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			series[name] = f
		}
	}
	return series
}

// waitLogLine waits for the log line that holds every one of subs.
func waitLogLine(t *testing.T, log *syncBuffer, subs ...string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		for _, line := range strings.Split(log.String(), "\n") {
			if containsAll(line, subs) {
				return line
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no log line holds %q", subs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// syncBuffer is a bytes.Buffer the server's log and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

var _ io.Writer = (*syncBuffer)(nil)

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
