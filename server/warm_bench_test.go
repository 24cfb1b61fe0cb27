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

// BenchmarkFirstTurn: a new session's first message, from the form's
// submit (POST /projects/{id}/sessions with the text) to its request at
// the model, with a process started ahead for the project (warm: the pool
// had a second to start it, as when the member opened the project page
// and typed) and without (cold: the CLI's whole start on the message).
// Warm means ready: the process has finished its prime (runner/prime.go)
// when the member's second of typing begins.
// The two servers run side by side and their samples alternate, so both
// see the same load. Each sample is a new session; its run ends before
// the next, so each warm sample takes a process the pool started after
// the last one was taken.
func BenchmarkFirstTurn(b *testing.B) {
	o := envOptions{quiet: true, perTurn: true}
	cold := newEnv(b, fakeapi.Scenario{{Text: "Reply."}}, o)
	o.warm = testWarm()
	warm := newEnv(b, fakeapi.Scenario{{Text: "Reply."}}, o)
	n := 20
	var lw, lc, pw, pc []time.Duration
	for i := 0; i < b.N; i++ {
		for j := range n {
			d, p := firstTurnLatency(b, warm, "warm", j)
			lw, pw = append(lw, d), append(pw, p)
			d, p = firstTurnLatency(b, cold, "cold", j)
			lc, pc = append(lc, d), append(pc, p)
		}
	}
	for _, c := range []struct {
		name string
		l, p []time.Duration
	}{{"warm", lw, pw}, {"cold", lc, pc}} {
		slices.Sort(c.l)
		slices.Sort(c.p)
		// The form's answer comes once the prompt is written to the
		// process (or the start failed): Parley's part of the way.
		fmt.Printf("first turn, %s: submit -> redirect p50 %.1f ms p90 %.1f ms\n", c.name, ms(percentile(c.p, 50)), ms(percentile(c.p, 90)))
		b.ReportMetric(ms(percentile(c.l, 50)), c.name+"-p50-ms")
		b.ReportMetric(ms(percentile(c.l, 99)), c.name+"-p99-ms")
		fmt.Printf("first turn, %s: n=%d p50 %.1f ms p90 %.1f ms p99 %.1f ms max %.1f ms\n",
			c.name, len(c.l), ms(percentile(c.l, 50)), ms(percentile(c.l, 90)), ms(percentile(c.l, 99)), ms(c.l[len(c.l)-1]))
	}
}

// firstTurnLatency is one sample of case c: a new session's first
// message, submit → request at the model, and submit → the form's answer.
func firstTurnLatency(b *testing.B, e *env, c string, i int) (time.Duration, time.Duration) {
	if c == "warm" {
		e.readyWarmPid(e.project.ID) // the member opens the project
	} else {
		e.get(fmt.Sprintf("/projects/%d", e.project.ID))
	}
	time.Sleep(time.Second) // typing; a process ahead has finished starting
	have := len(e.fake.Requests())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	t0 := time.Now()
	id := e.createSessionForm(e.project.ID, fmt.Sprintf("first message %d", i))
	posted := time.Since(t0)
	if err := e.fake.WaitRequests(ctx, have+1); err != nil {
		b.Fatal(err)
	}
	d := time.Since(t0)
	e.waitTurnOver(id)
	e.endRun(id)
	return d, posted
}
