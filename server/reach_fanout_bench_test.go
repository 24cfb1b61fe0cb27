//go:build bench

package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"parley/reach"
	"parley/reach/connect"
	"parley/reach/webpush"
	"parley/reach/webpush/pushtest"
	"parley/store"
	"parley/store/pgtest"
)

// BenchmarkReachFanout1000 is the cost of one ask at 1,000 subscribed
// devices: a Reacher (as serve makes it, Web Push through webpush-go and
// a netguard client) reaches a new permission ask (Allow / Deny, so each
// device gets its own answer token) on 1,000 devices, and then takes it
// back ("answered by") when it is answered. The Reacher sends to one
// device after another. One member with 1,000 devices is past the API's
// cap (reachweb.MaxDevices, 20 a person; the store takes them) and
// measures the cost per device; 100 members × 10 is a team's shape.
//
// ns/op is the wall time of the fan-out (Reacher.Once, which returns when
// every device was sent to and its delivery recorded); allocs/op, B/op
// and cpu-ms (user and system CPU time) count the whole test process
// while it runs, the receiving push service's included, Postgres's not.
// takeback-ms is the wall time of the 1,000 "answered" pushes. Receivers:
// pushtest (checks VAPID and decrypts, on the same cores) or a sink that
// answers 201 unread, to tell Parley's cost from the receiver's. Run it a
// few times:
//
//	go test -tags bench ./server/ -run '^$' -bench BenchmarkReachFanout1000 -benchtime=3x
func BenchmarkReachFanout1000(b *testing.B) {
	for _, c := range []struct {
		members, each int
		receiver      string
	}{{1, 1000, "sink"}, {1, 1000, "pushtest"}, {100, 10, "sink"}} {
		b.Run(fmt.Sprintf("members=%d,devices=%d,%s", c.members, c.members*c.each, c.receiver), func(b *testing.B) {
			benchmarkFanout(b, c.members, c.each, c.receiver == "pushtest")
		})
	}
}

// reachFanout is a project whose members have push devices, and a Reacher.
type reachFanout struct {
	st      *store.Store
	r       *reach.Reacher
	session string
	devices int
	svc     *pushtest.Service // nil: the sink
	sunk    atomic.Int64
	seq     int64
}

func benchmarkFanout(b *testing.B, members, each int, decrypt bool) {
	f := newFanout(b, members, each, decrypt)
	ctx := b.Context()
	var fan, back, cpu time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		id := f.open(b)
		b.StartTimer()
		t0, c0 := time.Now(), cpuTime()
		f.r.Once(ctx)
		fan, cpu = fan+time.Since(t0), cpu+cpuTime()-c0
		b.StopTimer()
		f.received(b, id)
		f.answer(b, id)
		t1 := time.Now()
		f.r.Once(ctx)
		back += time.Since(t1)
		f.received(b, "")
		b.StartTimer()
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(fan.Microseconds())/n/float64(f.devices), "µs/device")
	b.ReportMetric(float64(back.Milliseconds())/n, "takeback-ms")
	b.ReportMetric(float64(cpu.Milliseconds())/n, "cpu-ms")
	name := fmt.Sprintf("reach fan-out of one ask to %d devices (%d members)", f.devices, members)
	if decrypt {
		name += ", pushtest"
	}
	figure(name, float64(fan.Milliseconds())/n, "ms")
	figure(name+", take-back", float64(back.Milliseconds())/n, "ms")
	figure(name+", CPU of this process", float64(cpu.Milliseconds())/n, "ms")
}

// newFanout makes the project, its members and their devices.
func newFanout(b *testing.B, members, each int, decrypt bool) *reachFanout {
	ctx := b.Context()
	st, err := store.Open(ctx, pgtest.New(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(st.Close)
	k, err := webpush.NewKeys()
	if err != nil {
		b.Fatal(err)
	}
	f := &reachFanout{st: st, devices: members * each}
	endpoint := f.receiver(b, k, decrypt)
	owner, err := st.CreateUser(ctx, "owner@example.com", "Owner", "x", false)
	if err != nil {
		b.Fatal(err)
	}
	p, err := st.CreateProject(ctx, "Fan-out", owner.ID)
	if err != nil {
		b.Fatal(err)
	}
	if err := st.SetProjectReach(ctx, p.ID, store.ProjectReach{FirstReach: "all"}); err != nil {
		b.Fatal(err)
	}
	for m := range members {
		u, err := st.CreateUser(ctx, fmt.Sprintf("m%d@example.com", m), fmt.Sprintf("M%d", m), "x", false)
		if err != nil {
			b.Fatal(err)
		}
		if err := st.SetMember(ctx, p.ID, u.ID, "member"); err != nil {
			b.Fatal(err)
		}
		for i := range each {
			sub := endpoint(m*each + i)
			if _, err := st.AddPushDevice(ctx, store.PushDevice{UserID: u.ID, Endpoint: sub.Endpoint, P256dh: sub.P256dh, Auth: sub.Auth, Name: fmt.Sprintf("device %d", i)}); err != nil {
				b.Fatal(err)
			}
		}
	}
	s, err := st.CreateSessionBy(ctx, p.ID, "bench", "Owner", owner.ID)
	if err != nil {
		b.Fatal(err)
	}
	f.session = s.ID
	ch := connect.Channels(connect.Config{Allowed: []string{"127.0.0.1"}, Keys: k, Subject: "mailto:bench@example.com"})
	f.r = reach.New(st, ch, reach.Config{BaseURL: "https://parley.example.com"}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	return f
}

// receiver starts the push service and returns a maker of subscriptions.
func (f *reachFanout) receiver(b *testing.B, k webpush.Keys, decrypt bool) func(i int) webpush.Subscription {
	if decrypt {
		f.svc = pushtest.New(b, k.Public)
		return func(int) webpush.Subscription { return f.svc.Subscribe() }
	}
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		f.sunk.Add(1)
		w.WriteHeader(http.StatusCreated)
	}))
	b.Cleanup(sink.Close)
	key := pushtest.New(b, k.Public).Subscribe() // any valid P-256 key and auth secret
	return func(i int) webpush.Subscription {
		return webpush.Subscription{Endpoint: fmt.Sprintf("%s/push/%d", sink.URL, i), P256dh: key.P256dh, Auth: key.Auth}
	}
}

// open opens a permission ask in the session.
func (f *reachFanout) open(b *testing.B) string {
	id := uuid.NewString()
	payload, _ := json.Marshal(map[string]any{"input_id": id, "kind": "permission", "tool_name": "Bash",
		"input": map[string]string{"command": "go test -count=1 ./..."}, "request_id": "req-" + id})
	f.seq++
	if err := f.st.OpenInput(b.Context(), store.Input{ID: id, SessionID: f.session, Kind: "permission", Payload: payload},
		store.Event{SessionID: f.session, Seq: f.seq, Type: "input_requested", Payload: payload}); err != nil {
		b.Fatal(err)
	}
	return id
}

// answer answers the ask in Postgres, as the run loop does.
func (f *reachFanout) answer(b *testing.B, id string) {
	f.seq++
	if _, err := f.st.ResolveInput(b.Context(), id, "answered", json.RawMessage(`{"behavior":"allow"}`), "M0",
		store.Event{SessionID: f.session, Seq: f.seq, Type: "input_resolved", Payload: json.RawMessage(`{"input_id":"` + id + `"}`)}); err != nil {
		b.Fatal(err)
	}
}

// received checks that every device got a push (and, for an ask, that
// every delivery was recorded as sent).
func (f *reachFanout) received(b *testing.B, id string) {
	if f.svc != nil {
		ctx, cancel := context.WithTimeout(b.Context(), time.Minute)
		defer cancel()
		for i := range f.devices {
			if _, err := f.svc.Next(ctx); err != nil {
				b.Fatalf("push %d of %d: %v (refused: %v)", i+1, f.devices, err, f.svc.Rejections())
			}
		}
	} else if got := f.sunk.Swap(0); got != int64(f.devices) {
		b.Fatalf("the sink took %d pushes, want %d", got, f.devices)
	}
	if id == "" {
		return
	}
	ds, err := f.st.Deliveries(b.Context(), id)
	if err != nil {
		b.Fatal(err)
	}
	sent := 0
	for _, d := range ds {
		if d.Outcome == "sent" {
			sent++
		}
	}
	if sent != f.devices {
		b.Fatalf("%d deliveries sent of %d devices", sent, f.devices)
	}
}
