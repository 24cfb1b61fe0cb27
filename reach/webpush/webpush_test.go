package webpush_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"parley/reach/netguard"
	"parley/reach/webpush"
	"parley/reach/webpush/pushtest"
)

// setup gives a push service and a Sender allowed to reach it.
func setup(t testing.TB) (*pushtest.Service, *webpush.Sender) {
	t.Helper()
	keys, err := webpush.NewKeys()
	if err != nil {
		t.Fatal(err)
	}
	svc := pushtest.New(t, keys.Public)
	return svc, &webpush.Sender{Keys: keys, Subject: "mailto:ops@example.com", TTL: 120,
		Client: netguard.Client(netguard.ParseHosts("127.0.0.1"), 5*time.Second)}
}

func next(t testing.TB, svc *pushtest.Service) pushtest.Push {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	p, err := svc.Next(ctx)
	if err != nil {
		t.Fatalf("no push arrived: %v", err)
	}
	return p
}

// TestSendRoundTrip: what the Sender sends, the push service decrypts with
// the subscription's own keys, byte for byte, with the headers given.
func TestSendRoundTrip(t *testing.T) {
	svc, s := setup(t)
	payloads := map[string][]byte{
		"empty":        {},
		"json":         []byte(`{"type":"ask","title":"Claude asks in Ünïcødé 🚀","body":"Deploy?"}`),
		"max":          bytes.Repeat([]byte("x"), webpush.MaxPayload),
		"zeros at end": append([]byte("ends in NULs and 0x02 \x02"), 0, 0, 0),
	}
	for name, payload := range payloads {
		t.Run(name, func(t *testing.T) {
			sub := svc.Subscribe()
			topic := webpush.TopicFor("input-" + name)
			if err := s.Send(t.Context(), sub, payload, "high", topic); err != nil {
				t.Fatalf("Send: %v", err)
			}
			got := next(t, svc)
			want := pushtest.Push{Endpoint: sub.Endpoint, Payload: payload, Urgency: "high", Topic: topic, TTL: 120, At: got.At}
			if diff := cmp.Diff(want, got, cmp.Comparer(bytes.Equal)); diff != "" {
				t.Errorf("received push (-want +got):\n%s", diff)
			}
		})
	}
	if n := svc.Rejected(); n != 0 {
		t.Errorf("the push service rejected %d pushes: %q", n, svc.Rejections())
	}
}

// TestSendGone: a subscription the push service answers 410 (or does not
// know: 404) for is ErrGone, so the caller drops the device.
func TestSendGone(t *testing.T) {
	svc, s := setup(t)
	sub := svc.Subscribe()
	if err := s.Send(t.Context(), sub, []byte("before"), "", ""); err != nil {
		t.Fatalf("Send before Gone: %v", err)
	}
	svc.Gone(sub)
	if err := s.Send(t.Context(), sub, []byte("after"), "", ""); !errors.Is(err, webpush.ErrGone) {
		t.Errorf("Send after Gone: %v, want ErrGone", err)
	}
	unknown := svc.Subscribe()
	unknown.Endpoint = svc.URL + "/push/0123456789abcdef"
	if err := s.Send(t.Context(), unknown, []byte("unknown"), "", ""); !errors.Is(err, webpush.ErrGone) {
		t.Errorf("Send to an unknown endpoint: %v, want ErrGone", err)
	}
}

// TestSendStatusError: any other answer is an error naming its status.
func TestSendStatusError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "slow down", http.StatusTooManyRequests)
	}))
	t.Cleanup(srv.Close)
	svc, s := setup(t)
	sub := svc.Subscribe()
	sub.Endpoint = srv.URL + "/push/x"
	err := s.Send(t.Context(), sub, []byte("hi"), "", "")
	var se *webpush.StatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusTooManyRequests || errors.Is(err, webpush.ErrGone) {
		t.Fatalf("Send: %v, want a StatusError 429", err)
	}
	if !strings.Contains(err.Error(), "429") || !strings.Contains(err.Error(), "slow down") {
		t.Errorf("error %q does not name the status and the answer", err)
	}
}

// TestSendRefuses: what cannot be sent is refused before anything leaves.
func TestSendRefuses(t *testing.T) {
	svc, s := setup(t)
	good := svc.Subscribe()
	with := func(f func(*webpush.Subscription)) webpush.Subscription { c := good; f(&c); return c }
	tests := []struct {
		name    string
		sub     webpush.Subscription
		payload int
		urgency string
		topic   string
		want    string
	}{
		{"payload over the limit", good, webpush.MaxPayload + 1, "", "", "too large"},
		{"no endpoint", with(func(s *webpush.Subscription) { s.Endpoint = "" }), 10, "", "", "has no endpoint"},
		{"empty auth", with(func(s *webpush.Subscription) { s.Auth = "" }), 10, "", "", "auth secret must be base64url"},
		{"auth not base64", with(func(s *webpush.Subscription) { s.Auth = "not base64!" }), 10, "", "", "auth secret must be base64url"},
		{"auth of 15 bytes", with(func(s *webpush.Subscription) { s.Auth = "AAAAAAAAAAAAAAAAAAAA" }), 10, "", "", "must be 16 bytes; it is 15"},
		{"empty p256dh", with(func(s *webpush.Subscription) { s.P256dh = "" }), 10, "", "", "p256dh key must be base64url"},
		{"p256dh not a point", with(func(s *webpush.Subscription) { s.P256dh = "BAAA" + s.P256dh[4:] }), 10, "", "", "not a P-256 public key"},
		{"urgency", good, 10, "urgent", "", "urgency"},
		{"topic", good, 10, "", "a topic with spaces", "topic"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Send(t.Context(), tt.sub, make([]byte, tt.payload), tt.urgency, tt.topic)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Send: %v, want an error saying %q", err, tt.want)
			}
		})
	}
	if err := s.Send(t.Context(), good, make([]byte, webpush.MaxPayload+1), "", ""); !errors.Is(err, webpush.ErrPayloadTooLarge) {
		t.Errorf("Send of MaxPayload+1 bytes: %v, want ErrPayloadTooLarge", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if p, err := svc.Next(ctx); err == nil {
		t.Errorf("the push service received %q, want nothing", p.Payload)
	}
}

// TestSendNeedsAllowedHost: with the guarded client and nothing allowed,
// a push to a loopback endpoint never leaves.
func TestSendNeedsAllowedHost(t *testing.T) {
	svc, s := setup(t)
	s.Client = netguard.Client(nil, 5*time.Second)
	if err := s.Send(t.Context(), svc.Subscribe(), []byte("hi"), "", ""); !errors.Is(err, netguard.ErrRefused) {
		t.Errorf("Send: %v, want netguard.ErrRefused", err)
	}
}

func TestParseSubscription(t *testing.T) {
	svc, _ := setup(t)
	sub := svc.Subscribe()
	js := `{"endpoint":"` + sub.Endpoint + `","expirationTime":null,"keys":{"p256dh":"` + sub.P256dh + `","auth":"` + sub.Auth + `"}}`
	got, err := webpush.ParseSubscription([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	if got != sub {
		t.Errorf("ParseSubscription = %+v, want %+v", got, sub)
	}
	if _, err := webpush.ParseSubscription([]byte(`{"endpoint":"https://push.example.com/x","keys":{}}`)); err == nil {
		t.Error("ParseSubscription of a subscription without keys: no error")
	}
}

func TestSubject(t *testing.T) {
	for subject, ok := range map[string]bool{
		"mailto:ops@example.com": true, "https://parley.example.com": true,
		"": false, "ops@example.com": false, "mailto:": false, "http://parley.example.com": false,
	} {
		svc, s := setup(t)
		s.Subject = subject
		err := s.Send(t.Context(), svc.Subscribe(), []byte("hi"), "", "")
		if (err == nil) != ok {
			t.Errorf("Subject %q: Send = %v, want ok=%v", subject, err, ok)
		}
	}
}
