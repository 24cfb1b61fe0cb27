//go:build bench

package server

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"parley/runner/fakeapi"
)

// BenchmarkMessageAfterIdleStop: a message's send on the page's socket →
// its request at the model, for a session whose process has ended (the
// idle stop), with the page opened a second before (the process started
// ahead: server/ahead.go) and without (a socket that never says hello,
// so nothing starts until the message: the CLI's whole start, with
// --resume), beside a follow-up to a live process.
func BenchmarkMessageAfterIdleStop(b *testing.B) {
	for _, c := range []string{"followup", "ahead", "cold"} {
		b.Run(c, func(b *testing.B) {
			e := newEnv(b, fakeapi.Scenario{{Text: "Reply."}}, envOptions{quiet: true, perTurn: true})
			n := 20
			var l []time.Duration
			for i := 0; i < b.N; i++ {
				for range n {
					l = append(l, messageLatency(b, e, c))
				}
			}
			slices.Sort(l)
			b.ReportMetric(ms(percentile(l, 50)), "p50-ms")
			b.ReportMetric(ms(percentile(l, 99)), "p99-ms")
			fmt.Printf("message after idle stop, %s: n=%d p50 %.1f ms p90 %.1f ms max %.1f ms\n",
				c, len(l), ms(percentile(l, 50)), ms(percentile(l, 90)), ms(l[len(l)-1]))
		})
	}
}

// messageLatency is one measure of case c on a fresh session that has had
// one turn.
func messageLatency(b *testing.B, e *env, c string) time.Duration {
	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt("first")
	w.waitFor(60*time.Second, "Reply.")
	e.waitTurnOver(s.ID)
	var page *ws
	switch c {
	case "followup":
		page = w
	case "ahead":
		w.conn.Close()
		e.endRun(s.ID)
		page = e.dial(s.ID, 0)
		if !e.waitLive(s.ID, true, 30*time.Second) {
			b.Fatal("no process started ahead")
		}
		time.Sleep(time.Second)
	case "cold":
		w.conn.Close()
		e.endRun(s.ID)
		page = e.dialPathAs(e.user, "/sessions/"+s.ID+"/ws") // no hello
	}
	have := len(e.fake.Requests())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	t0 := time.Now()
	page.prompt("second")
	if err := e.fake.WaitRequests(ctx, have+1); err != nil {
		b.Fatal(err)
	}
	d := time.Since(t0)
	e.waitTurnOver(s.ID)
	page.conn.Close()
	e.endRun(s.ID)
	return d
}
