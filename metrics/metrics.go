// Package metrics is Parley's Prometheus instrumentation: one Metrics value,
// its own registry, and methods named for what happened. A nil *Metrics
// records nothing, so the parts it instruments work without it.
package metrics

import (
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Metrics holds Parley's collectors.
type Metrics struct {
	reg          *prometheus.Registry
	asks         *prometheus.CounterVec
	askOutcomes  *prometheus.CounterVec
	askToFrame   prometheus.Histogram
	answerToTool prometheus.Histogram
	events       prometheus.Counter
	batches      prometheus.Histogram
	wsClients    prometheus.Gauge
	exits        *prometheus.CounterVec
	takeovers    prometheus.Counter
	dbWaits      prometheus.Counter

	mu       sync.Mutex
	answered map[string]time.Time // session → when an attached ask was answered
	shown    map[string]bool      // "session seq" of asks already shown once
}

var latencyBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// New returns Metrics with the Go runtime's and the process's collectors;
// liveRuns and queuedRuns are read at each scrape (nil = not exported).
func New(liveRuns, queuedRuns func() int) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), answered: map[string]time.Time{}, shown: map[string]bool{}}
	f := prometheus.WrapRegistererWithPrefix("parley_", m.reg)
	m.asks = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "asks_opened_total",
		Help: "Asks opened, by kind (question, permission, plan)."}, []string{"kind"})
	m.askOutcomes = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "asks_resolved_total",
		Help: "Asks resolved, by kind and outcome (answered, denied, timed_out, cancelled, expired)."}, []string{"kind", "outcome"})
	m.askToFrame = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "ask_to_browser_seconds",
		Help: "From an ask's event being recorded to its first frame written to a browser.", Buckets: latencyBuckets})
	m.answerToTool = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "answer_to_tool_result_seconds",
		Help: "From an answer being recorded to the tool result the CLI printed after it.", Buckets: latencyBuckets})
	m.events = prometheus.NewCounter(prometheus.CounterOpts{Name: "events_written_total",
		Help: "Events written to the log by run loops (rate() gives events per second)."})
	m.batches = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "event_insert_seconds",
		Help: "Latency of one write of a run loop's batch of events (one multi-row INSERT and its commit).", Buckets: latencyBuckets})
	m.wsClients = prometheus.NewGauge(prometheus.GaugeOpts{Name: "websocket_clients", Help: "Open session WebSockets."})
	m.exits = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cli_exits_total",
		Help: "Ended claude processes, by reason (ok, stopped, failed)."}, []string{"reason"})
	m.takeovers = prometheus.NewCounter(prometheus.CounterOpts{Name: "lease_takeovers_total",
		Help: "Sessions taken over from replicas whose lease lapsed."})
	m.dbWaits = prometheus.NewCounter(prometheus.CounterOpts{Name: "db_unavailable_writes_total",
		Help: "Run-loop writes (or checks) that found the database unavailable; each is retried until it is back."})
	f.MustRegister(m.asks, m.askOutcomes, m.askToFrame, m.answerToTool, m.events, m.batches, m.wsClients, m.exits, m.takeovers,
		m.dbWaits)
	m.Runs(liveRuns, queuedRuns)
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Runs exports the live and queued runs, read at each scrape (nil = not
// exported): for Metrics made before the supervisor whose runs they
// count (New(nil, nil)), which itself writes through them. Call it once.
func (m *Metrics) Runs(liveRuns, queuedRuns func() int) {
	f := prometheus.WrapRegistererWithPrefix("parley_", m.reg)
	if liveRuns != nil {
		f.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "runs_live", Help: "Live claude processes."},
			func() float64 { return float64(liveRuns()) }))
	}
	if queuedRuns != nil {
		f.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "runs_queued", Help: "Runs waiting for a slot."},
			func() float64 { return float64(queuedRuns()) }))
	}
}

// Lease exports this replica's lease (package cluster): parley_lease_held
// is 1 while it is surely held, 0 while it is in doubt (the database out of
// reach past the lease's TTL): run loops' writes and the runs' model
// traffic then wait, and parley_model_requests_waiting counts the model
// requests and responses waiting.
func (m *Metrics) Lease(held func() bool, modelWaiting func() int) {
	if m == nil {
		return
	}
	f := prometheus.WrapRegistererWithPrefix("parley_", m.reg)
	f.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "lease_held",
		Help: "1 while this replica surely holds its lease; 0 while it is in doubt and runs' writes and model traffic wait."},
		func() float64 {
			if held() {
				return 1
			}
			return 0
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "model_requests_waiting",
			Help: "Model requests and responses of runs waiting for this replica's lease."},
			func() float64 { return float64(modelWaiting()) }))
}

// EventsWritten records one write of n events that took d.
func (m *Metrics) EventsWritten(n int, d time.Duration) {
	if m == nil {
		return
	}
	m.events.Add(float64(n))
	m.batches.Observe(d.Seconds())
}

// WSOpened and WSClosed count session WebSockets.
func (m *Metrics) WSOpened() {
	if m != nil {
		m.wsClients.Inc()
	}
}

// WSClosed is WSOpened's counterpart.
func (m *Metrics) WSClosed() {
	if m != nil {
		m.wsClients.Dec()
	}
}

// TakenOver counts sessions taken over from lapsed replicas.
func (m *Metrics) TakenOver(sessions int) {
	if m != nil {
		m.takeovers.Add(float64(sessions))
	}
}

// DatabaseUnavailable counts a run-loop write that found the database
// unavailable (and will be retried).
func (m *Metrics) DatabaseUnavailable() {
	if m != nil {
		m.dbWaits.Inc()
	}
}

// FrameSent observes an ask's first frame written to any browser.
func (m *Metrics) FrameSent(sessionID string, seq int64, kind string, born time.Time) {
	if m == nil || kind != "input_requested" || born.IsZero() {
		return
	}
	key := sessionID + " " + strconv.FormatInt(seq, 10)
	m.mu.Lock()
	first := !m.shown[key]
	if first {
		if len(m.shown) > 10_000 {
			clear(m.shown) // a bound; an ask shown again after this is not re-counted by much
		}
		m.shown[key] = true
	}
	m.mu.Unlock()
	if first {
		m.askToFrame.Observe(time.Since(born).Seconds())
	}
}

// Event counts what a recorded event says: asks opened and resolved, CLI
// exits, and the time from an answer to the tool result that follows it.
func (m *Metrics) Event(sessionID, typ string, payload []byte, at time.Time) {
	if m == nil {
		return
	}
	switch typ {
	case "input_requested":
		var p struct{ Kind string }
		_ = json.Unmarshal(payload, &p)
		m.asks.WithLabelValues(p.Kind).Inc()
	case "input_resolved":
		var p struct {
			Kind, Status string
			Detached     bool
		}
		_ = json.Unmarshal(payload, &p)
		m.askOutcomes.WithLabelValues(p.Kind, p.Status).Inc()
		if !p.Detached {
			m.mu.Lock()
			m.answered[sessionID] = at
			m.mu.Unlock()
		}
	case "user":
		m.mu.Lock()
		t, ok := m.answered[sessionID]
		delete(m.answered, sessionID)
		m.mu.Unlock()
		if ok && strings.Contains(string(payload), `"tool_result"`) {
			m.answerToTool.Observe(at.Sub(t).Seconds())
		}
	case "run_ended":
		var p struct {
			ExitCode int    `json:"exit_code"`
			Reason   string `json:"reason"`
		}
		_ = json.Unmarshal(payload, &p)
		reason := "failed"
		switch {
		case p.ExitCode == 0:
			reason = "ok"
		case strings.HasPrefix(p.Reason, "stopped by Parley"):
			reason = "stopped"
		}
		m.exits.WithLabelValues(reason).Inc()
	}
}
