//go:build bench

package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"parley/reach"
	"parley/runner"
	"parley/runner/fakeapi"
	"parley/store"
)

// BenchmarkReachPush measures an ask's way out to a phone through the
// whole stack (real claude CLI and mcp-askuser, run loop, Postgres, the
// Reacher, webpush-go, a local RFC 8030 push service that checks VAPID
// and decrypts): from the ask opened (the input row's created_at,
// Postgres's now() of the transaction that stores it) to the push
// request arriving at the push service (pushtest's Push.At). Each
// session is its own member's, with one phone; nobody looks at a page.
// Every push is answered from the notification after a think time of
// 100–600 ms, as BenchmarkAskLatency does. A session's first ask (its
// CLI's start-up) is warm-up, left out. Run it once:
//
//	go test -tags bench ./server/ -run '^$' -bench BenchmarkReachPush -benchtime=1x
func BenchmarkReachPush(b *testing.B) {
	for _, n := range []int{1, 20} {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			l := runReachLatency(b, n, reachAsksPer(n))
			l.report(b, "push", "ask opened → push at the push service", l.push)
			l.report(b, "push-claim", "  ask opened → the Reacher claimed its first stage (Postgres now())", l.claim)
			l.report(b, "push-send", "  stage claimed → push at the push service", l.send)
			l.report(b, "card", "ask opened → its card on the page (the same asks, for comparison)", l.card)
			if n == 1 {
				l.report(b, "push-from-event", "input_requested published → push at the push service", l.pushFromEvent)
			}
		})
	}
}

// BenchmarkReachAnswer measures the way back, the same run as
// BenchmarkReachPush: from the notification's action (the POST to
// /reach/answer, as the service worker sends it, about to be written)
// to the ask's tool_result arriving at the fake model in the CLI's next
// request (stamped as the fake parses it, under its lock).
func BenchmarkReachAnswer(b *testing.B) {
	for _, n := range []int{1, 20} {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			l := runReachLatency(b, n, reachAsksPer(n))
			l.report(b, "answer", "notification action → tool_result at the model", l.answer)
			l.report(b, "answer-post", "notification action → POST answered (200)", l.post)
		})
	}
}

// reachAsksPer is how many asks each session measures (after its
// warm-up ask).
func reachAsksPer(sessions int) int {
	if sessions == 1 {
		return benchInt("PARLEY_BENCH_REACH_ASKS", 30)
	}
	return max(benchInt("PARLEY_BENCH_REACH_ASKS", 30)/6, 2)
}

// reachLatency is one run's latencies, sorted, warm-up asks left out.
type reachLatency struct {
	sessions                                int
	push, pushFromEvent, answer, post, card []time.Duration
	claim, send                             []time.Duration // push split where the Reacher claimed the ask's first stage
	warmPush, warmAnswer                    []time.Duration
}

// report reports p50 and p99 of l as metrics and figures, and prints them
// with p90 and max.
func (l reachLatency) report(b *testing.B, name, what string, d []time.Duration) {
	if len(d) == 0 {
		b.Fatalf("no %s latencies", name)
	}
	b.ReportMetric(ms(percentile(d, 50)), name+"-p50-ms")
	b.ReportMetric(ms(percentile(d, 99)), name+"-p99-ms")
	figure(fmt.Sprintf("reach %s p50, %d sessions", name, l.sessions), ms(percentile(d, 50)), "ms")
	figure(fmt.Sprintf("reach %s p99, %d sessions", name, l.sessions), ms(percentile(d, 99)), "ms")
	fmt.Printf("reach latency: sessions=%d, %s, %d asks, ms: p50 %.2f  p90 %.2f  p99 %.2f  max %.2f\n", l.sessions, what, len(d),
		ms(percentile(d, 50)), ms(percentile(d, 90)), ms(percentile(d, 99)), ms(d[len(d)-1]))
}

// reachBench is the run: the model's request arrivals and each ask's push
// and answer.
type reachBench struct {
	e       *env
	mu      sync.Mutex
	arrived []time.Time // one per main request, in fakeapi's order
	asks    map[string]*reachAsk
	cards   map[string]time.Time // when each ask's card reached the page
	errs    []error
}

// reachAsk is one ask's push and its answer.
type reachAsk struct {
	pushAt, sent, answered time.Time
	status                 int
}

// stamp notes a main request's arrival: fakeapi calls ToolInputFrom
// under its lock right before it records the request, so the stamps are
// in Requests' order.
func (r *reachBench) stamp() {
	r.mu.Lock()
	r.arrived = append(r.arrived, time.Now())
	r.mu.Unlock()
}

// reachScenario asks n questions a notification can answer, then ends
// the turn; every step stamps its request's arrival.
func reachScenario(n int, r *reachBench) fakeapi.Scenario {
	from := func(string) any { r.stamp(); return twoColours() }
	sc := make(fakeapi.Scenario, 0, n+1)
	for range n {
		sc = append(sc, fakeapi.Step{ToolName: askTool, ToolInputFrom: from})
	}
	return append(sc, fakeapi.Step{Text: "All answered.", ToolInputFrom: from})
}

func runReachLatency(b *testing.B, sessions, asks int) reachLatency {
	r := &reachBench{asks: map[string]*reachAsk{}, cards: map[string]time.Time{}}
	e := newEnv(b, reachScenario(1+asks, r), envOptions{perTurn: true, quiet: true, reach: true, stampPublish: true})
	r.e = e
	if err := e.st.SetProjectReach(b.Context(), e.project.ID, store.ProjectReach{FirstReach: "starter", EscalateAfter: 0}); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	var answering sync.WaitGroup
	go r.answerPushes(ctx, &answering)
	var ids []string
	for i := range sessions {
		u := e.member(fmt.Sprintf("p%d@example.com", i), fmt.Sprintf("P%d", i), roleMember)
		e.subscribe(u, "phone")
		s := e.newSession()
		ids = append(ids, s.ID)
		w := e.dialAs(u, s.ID, 0)
		go r.readPage(w)
		w.prompt("pick colours")
	}
	b.ResetTimer()
	wctx, wcancel := context.WithTimeout(ctx, 15*time.Minute)
	defer wcancel()
	if err := e.fake.WaitRequests(wctx, sessions*(asks+2)); err != nil {
		b.Fatalf("the sessions did not finish: %v (pushes refused: %v)", err, e.reach.push.Rejections())
	}
	b.StopTimer()
	cancel()
	answering.Wait()
	return r.latencies(b, sessions, ids)
}

// readPage reads a page that nobody looks at (it reports no visibility),
// noting when each ask's card first arrives, for comparison.
func (r *reachBench) readPage(w *ws) {
	for f := range w.frames {
		if !strings.Contains(f, `class="item ask"`) {
			continue
		}
		if id, ok := inputID(f); ok {
			r.mu.Lock()
			if _, seen := r.cards[id]; !seen {
				r.cards[id] = time.Now()
			}
			r.mu.Unlock()
		}
	}
}

// answerPushes answers every ask pushed, from the notification, after a
// think time.
func (r *reachBench) answerPushes(ctx context.Context, answering *sync.WaitGroup) {
	for {
		p, err := r.e.reach.push.Next(ctx)
		if err != nil {
			return
		}
		var m reach.Message
		if json.Unmarshal(p.Payload, &m) != nil || m.Type != reach.TypeAsk {
			continue
		}
		a := &reachAsk{pushAt: p.At}
		r.mu.Lock()
		r.asks[m.InputID] = a
		r.mu.Unlock()
		answering.Go(func() {
			time.Sleep(thinkTime())
			sent := time.Now()
			res, err := http.PostForm(m.AnswerURL, url.Values{"token": {m.Token}, "action": {"choice:1"}})
			r.mu.Lock()
			defer r.mu.Unlock()
			if err != nil {
				r.errs = append(r.errs, err)
				return
			}
			res.Body.Close()
			a.sent, a.answered, a.status = sent, time.Now(), res.StatusCode
		})
	}
}

// latencies joins the asks (Postgres), their pushes and answers, and the
// model's requests.
func (r *reachBench) latencies(b *testing.B, sessions int, ids []string) reachLatency {
	ctx := context.Background()
	reqs := r.e.fake.Requests()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.errs) > 0 {
		b.Fatalf("answering: %v", r.errs)
	}
	if len(reqs) != len(r.arrived) {
		b.Fatalf("%d requests but %d arrival stamps", len(reqs), len(r.arrived))
	}
	arrival := map[string]time.Time{} // tool_use id answered → the request's arrival
	for k, req := range reqs {
		if id, _, _, ok := req.LastToolResult(); ok {
			arrival[id] = r.arrived[k]
		}
	}
	// publishStamps keys its stamps by seq alone, which every session
	// counts from 1: with more sessions they are not told apart.
	claimed := r.claimed(b)
	published := map[int64]time.Time{}
	if sessions == 1 {
		published = r.e.published.stamps()
	}
	l := reachLatency{sessions: sessions}
	for _, sid := range ids {
		order, requested := r.requested(b, sid, published)
		for i, id := range order {
			in, err := r.e.st.GetInput(ctx, id)
			if err != nil {
				b.Fatal(err)
			}
			a := r.asks[in.ID]
			if a == nil || a.status != http.StatusOK {
				b.Fatalf("ask %s (%d of session %s): pushed and answered %+v", in.ID, i, sid, a)
			}
			var p runner.AskPayload
			_ = json.Unmarshal(in.Payload, &p)
			at, ok := arrival[p.ToolUseID]
			if !ok {
				b.Fatalf("ask %s: no request carries its tool_result (%s)", in.ID, p.ToolUseID)
			}
			push, answer := a.pushAt.Sub(in.CreatedAt), at.Sub(a.sent)
			if i == 0 {
				l.warmPush, l.warmAnswer = append(l.warmPush, push), append(l.warmAnswer, answer)
				continue
			}
			l.push, l.answer, l.post = append(l.push, push), append(l.answer, answer), append(l.post, a.answered.Sub(a.sent))
			if t, ok := claimed[in.ID]; ok {
				l.claim, l.send = append(l.claim, t.Sub(in.CreatedAt)), append(l.send, a.pushAt.Sub(t))
			}
			if t, ok := r.cards[in.ID]; ok {
				l.card = append(l.card, t.Sub(in.CreatedAt))
			}
			if t, ok := requested[in.ID]; ok {
				l.pushFromEvent = append(l.pushFromEvent, a.pushAt.Sub(t))
			}
		}
	}
	for _, d := range [][]time.Duration{l.push, l.pushFromEvent, l.answer, l.post, l.card, l.claim, l.send, l.warmPush, l.warmAnswer} {
		slices.Sort(d)
	}
	return l
}

// claimed maps each ask to when the Reacher claimed its first stage
// (reach_stages.at, Postgres's now() as the claim's transaction began).
func (r *reachBench) claimed(b *testing.B) map[string]time.Time {
	conn, err := pgx.Connect(context.Background(), r.e.dbURL)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, _ := conn.Query(context.Background(), `SELECT input_id::text, at FROM reach_stages WHERE stage = 1`)
	out := map[string]time.Time{}
	var id string
	var at time.Time
	if _, err := pgx.ForEachRow(rows, []any{&id, &at}, func() error { out[id] = at; return nil }); err != nil {
		b.Fatal(err)
	}
	return out
}

// requested lists the session's asks in order and when each one's
// input_requested event was published.
func (r *reachBench) requested(b *testing.B, sessionID string, published map[int64]time.Time) ([]string, map[string]time.Time) {
	evs, err := r.e.st.EventsAfter(context.Background(), sessionID, 0, 0)
	if err != nil {
		b.Fatal(err)
	}
	var order []string
	out := map[string]time.Time{}
	for _, ev := range evs {
		if ev.Type != runner.TypeInputRequested {
			continue
		}
		var p struct {
			InputID string `json:"input_id"`
		}
		if json.Unmarshal(ev.Payload, &p) != nil {
			b.Fatalf("input_requested %s", ev.Payload)
		}
		order = append(order, p.InputID)
		if t := published[ev.Seq]; !t.IsZero() {
			out[p.InputID] = t
		}
	}
	return order, out
}
