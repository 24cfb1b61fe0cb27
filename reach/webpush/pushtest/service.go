// Package pushtest is a real, local Web Push service (RFC 8030) for tests:
// it hands out subscriptions whose keys it holds, checks the sender's VAPID
// token (RFC 8292) on every push, decrypts the payload (RFC 8291) with its
// own code, not the sender's, and queues what it received for the test.
//
// It serves plain http on loopback, so the Parley under test must allow
// its host ("127.0.0.1") in PARLEY_PUSH_HOSTS.
package pushtest

import (
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"parley/reach/webpush"
)

// Push is one push the service accepted, decrypted.
type Push struct {
	Endpoint string
	Payload  []byte
	Urgency  string // the Urgency header, "" if none
	Topic    string // the Topic header, "" if none
	TTL      int
	At       time.Time
}

// Service is the push service. Its methods may be called from any
// goroutine.
type Service struct {
	URL string // its origin, "http://127.0.0.1:<port>"

	vapid []byte // the VAPID public key every push must be signed with
	srv   *httptest.Server

	mu         sync.Mutex
	devices    map[string]*device // by the id in the endpoint's path
	queue      []Push
	arrived    chan struct{} // closed and replaced when a push is queued
	rejections []string
}

// device is one subscription's receiving side.
type device struct {
	key  *ecdh.PrivateKey
	auth []byte
	gone bool
}

// New starts a push service that accepts pushes signed with the VAPID
// key vapidPublic (base64url, as webpush.Keys.Public). It stops when the
// test ends.
func New(t testing.TB, vapidPublic string) *Service {
	t.Helper()
	key, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(vapidPublic, "="))
	if err != nil || len(key) != 65 {
		t.Fatalf("pushtest: the VAPID public key %q is not a base64url P-256 point", vapidPublic)
	}
	s := &Service{vapid: key, devices: map[string]*device{}, arrived: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	t.Cleanup(s.srv.Close)
	return s
}

// Subscribe makes a subscription as a browser would: a fresh P-256 key
// pair and a 16-byte auth secret, of which the service keeps the private
// halves, and an endpoint <URL>/push/<random id>.
func (s *Service) Subscribe() webpush.Subscription {
	key, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	d := &device{key: key, auth: make([]byte, 16)}
	rand.Read(d.auth)
	id := make([]byte, 16)
	rand.Read(id)
	endpoint := s.URL + "/push/" + hex.EncodeToString(id)
	s.mu.Lock()
	s.devices[hex.EncodeToString(id)] = d
	s.mu.Unlock()
	return webpush.Subscription{
		Endpoint: endpoint,
		P256dh:   base64.RawURLEncoding.EncodeToString(key.PublicKey().Bytes()),
		Auth:     base64.RawURLEncoding.EncodeToString(d.auth),
	}
}

// Gone makes sub's endpoint answer 410 Gone from now on, as a push service
// does for a subscription the user revoked.
func (s *Service) Gone(sub webpush.Subscription) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d := s.devices[strings.TrimPrefix(sub.Endpoint, s.URL+"/push/")]; d != nil {
		d.gone = true
	}
}

// Next returns the oldest push not yet returned, waiting for one until ctx
// ends.
func (s *Service) Next(ctx context.Context) (Push, error) {
	for {
		s.mu.Lock()
		if len(s.queue) > 0 {
			p := s.queue[0]
			s.queue = s.queue[1:]
			s.mu.Unlock()
			return p, nil
		}
		arrived := s.arrived
		s.mu.Unlock()
		select {
		case <-arrived:
		case <-ctx.Done():
			return Push{}, ctx.Err()
		}
	}
}

// Rejected is how many pushes the service refused (bad or missing VAPID
// token, missing TTL, undecryptable body, ...). None of them was queued.
func (s *Service) Rejected() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.rejections)
}

// Rejections are the reasons of the refusals, oldest first.
func (s *Service) Rejections() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.rejections...)
}

func (s *Service) push(p Push) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, p)
	close(s.arrived)
	s.arrived = make(chan struct{})
}

func (s *Service) reject(w http.ResponseWriter, status int, reason string) {
	s.mu.Lock()
	s.rejections = append(s.rejections, reason)
	s.mu.Unlock()
	http.Error(w, reason, status)
}
