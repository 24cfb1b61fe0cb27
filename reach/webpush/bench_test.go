//go:build bench

package webpush_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"parley/reach/webpush"
	"parley/reach/webpush/pushtest"
)

// payload is about the size of an ask's push: a Message with a body of a
// few hundred bytes and its actions.
var payload = []byte(fmt.Sprintf(`{"type":"ask","input_id":"in-1","kind":"permission","title":"Claude wants to run Bash",`+
	`"body":%q,"project":"web","session":"Fix the flaky test","url":"https://parley.example.com/sessions/1#ask-in-1",`+
	`"actions":[{"action":"allow","title":"Allow"},{"action":"deny","title":"Deny"}],"token":"%064d",`+
	`"answer_url":"https://parley.example.com/reach/answer"}`, strings.Repeat("run go test -count=1 ./... then ", 13), 0))

// sink answers every push 201 without checking or decrypting it, to tell
// the sender's cost from the receiving push service's (both share the
// benchmark's CPU).
func sink(b *testing.B) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
	}))
	b.Cleanup(srv.Close)
	return srv.URL
}

// BenchmarkSend: one push, sent, checked and decrypted by pushtest (and,
// in /sink, only sent). ns/op and allocs/op include the receiving side.
func BenchmarkSend(b *testing.B) {
	svc, s := setup(b)
	sub := svc.Subscribe()
	b.Logf("payload: %d bytes", len(payload))
	b.Run("pushtest", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := s.Send(b.Context(), sub, payload, "high", ""); err != nil {
				b.Fatal(err)
			}
			if _, err := svc.Next(b.Context()); err != nil {
				b.Fatal(err)
			}
		}
	})
	sunk := sub
	sunk.Endpoint = sink(b) + "/push/x"
	b.Run("sink", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := s.Send(b.Context(), sunk, payload, "high", ""); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkSend1000: the cost of one ask at 1,000 subscribed devices: one
// fan-out of 1,000 sends through a pool of workers. µs/device is the
// wall time of the fan-out divided by 1,000.
func BenchmarkSend1000(b *testing.B) {
	svc, s := setup(b)
	subs := make([]webpush.Subscription, 1000)
	for i := range subs {
		subs[i] = svc.Subscribe()
	}
	sunk := make([]webpush.Subscription, len(subs))
	sinkURL := sink(b)
	for i, sub := range subs {
		sunk[i] = sub
		sunk[i].Endpoint = fmt.Sprintf("%s/push/%d", sinkURL, i)
	}
	for _, receiver := range []string{"pushtest", "sink"} {
		for _, workers := range []int{4, 16, 64} {
			b.Run(fmt.Sprintf("%s/workers=%d", receiver, workers), func(b *testing.B) {
				targets := subs
				if receiver == "sink" {
					targets = sunk
				}
				for b.Loop() {
					fanOut(b, s, targets, workers)
					if receiver == "pushtest" {
						drain(b, svc, len(targets))
					}
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*len(subs)), "µs/device")
			})
		}
	}
}

func fanOut(b *testing.B, s *webpush.Sender, subs []webpush.Subscription, workers int) {
	g, ctx := errgroup.WithContext(b.Context())
	g.SetLimit(workers)
	for _, sub := range subs {
		g.Go(func() error { return s.Send(ctx, sub, payload, "high", webpush.TopicFor("in-1")) })
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
}

func drain(b *testing.B, svc *pushtest.Service, n int) {
	ctx, cancel := context.WithTimeout(b.Context(), time.Minute)
	defer cancel()
	for range n {
		if _, err := svc.Next(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
