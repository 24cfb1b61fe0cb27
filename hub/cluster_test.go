package hub

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

// announcement is one Hub.Announce call.
type announcement struct {
	session string
	names   string
	first   bool
}

// runHub runs a hub, set up by configure first, whose announcements land
// on the returned channel.
func runHub(t *testing.T, configure ...func(*Hub)) (*Hub, <-chan announcement) {
	t.Helper()
	h := New()
	for _, c := range configure {
		c(h)
	}
	out := make(chan announcement, 64)
	h.Announce = func(id string, names []string, first bool) {
		out <- announcement{id, strings.Join(names, ","), first}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = h.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return h, out
}

// nextPresence returns the next presence frame the subscription gets.
func nextPresence(t *testing.T, s *Subscription) string {
	t.Helper()
	for {
		select {
		case f, ok := <-s.C:
			if !ok {
				t.Fatal("subscription closed")
			}
			if strings.Contains(string(f.Data), `id="presence"`) {
				return string(f.Data)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no presence frame")
		}
	}
}

// The hub announces local viewers (first once), lists other replicas'
// viewers with its own, answers a replica that asks, and forgets a
// replica that stopped.
func TestHubPresenceAcrossReplicas(t *testing.T) {
	h, out := runHub(t)
	ctx := t.Context()
	ann, err := h.SubscribeAs(ctx, "s1", "Ann")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := <-out, (announcement{"s1", "Ann", true}); got != want {
		t.Errorf("announced %+v, want %+v", got, want)
	}
	nextPresence(t, ann)

	h.RemoteViewers("rB", "s1", []string{"Bob", "Bob"}, false)
	if got := nextPresence(t, ann); !strings.Contains(got, "<li>Ann</li>") || !strings.Contains(got, "<li>Bob (2 tabs)</li>") {
		t.Errorf("presence with Bob's two tabs on B:\n%s", got)
	}
	select {
	case a := <-out:
		t.Errorf("a remote change was announced back: %+v", a)
	default:
	}

	h.RemoteViewers("rC", "s1", []string{"Cy"}, true) // C starts to show s1: it asks
	if got, want := <-out, (announcement{"s1", "Ann", false}); got != want {
		t.Errorf("answer to C's ask: %+v, want %+v", got, want)
	}
	nextPresence(t, ann)

	h.RemoteViewers("rB", "", nil, false) // B stopped
	if got := nextPresence(t, ann); strings.Contains(got, "Bob") || !strings.Contains(got, "<li>Cy</li>") {
		t.Errorf("presence after B stopped:\n%s", got)
	}

	h.Recheck()
	select {
	case <-ann.Recheck:
	case <-time.After(5 * time.Second):
		t.Error("Recheck did not reach the subscription")
	}
	h.CloseSession("s1")
	for range ann.C {
	}
	if got, want := <-out, (announcement{"s1", "", false}); got != want {
		t.Errorf("after the session's sockets closed: %+v, want %+v", got, want)
	}
}
