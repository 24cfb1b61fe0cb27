package askuser

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// blockingAsker holds every question until its ctx ends, reporting the
// start on started and the end on done: it stands in for a person who never
// answers.
type blockingAsker struct{ started, done chan error }

func newBlockingAsker() blockingAsker {
	return blockingAsker{started: make(chan error, 1), done: make(chan error, 1)}
}

func (b blockingAsker) Ask(ctx context.Context, _ Form) (Answer, error) {
	b.started <- nil
	<-ctx.Done()
	b.done <- ctx.Err()
	return Answer{}, ctx.Err()
}

// relayServer runs RelayHandler for asker under token "tok" and returns the
// client config that reaches it.
func relayServer(t *testing.T, asker Asker) Config {
	t.Helper()
	b := NewBroker()
	b.Register("tok", asker)
	srv := httptest.NewServer(RelayHandler(b))
	t.Cleanup(srv.Close)
	return Config{URL: srv.URL + "/internal/ask", Token: "tok", TimeoutSeconds: 60}
}

func TestClientAsk(t *testing.T) {
	want := Answer{Status: StatusAnswered, AnsweredBy: "ann", Replies: []Reply{{Selected: []string{"Red"}}}}
	asker := &fakeAsker{answer: want}
	c := NewClient(relayServer(t, asker))
	q := Single(Question{Question: "Colour?", Options: []Option{{Label: "Red"}, {Label: "Blue"}}})
	got, err := c.Ask(t.Context(), q)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("answer mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]Form{q}, asker.questions()); diff != "" {
		t.Errorf("asked mismatch (-want +got):\n%s", diff)
	}
}

func TestClientAskErrors(t *testing.T) {
	live := relayServer(t, &fakeAsker{err: errors.New("the run is ending")})
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "database is down", http.StatusInternalServerError)
	}))
	t.Cleanup(broken.Close)
	badStatus := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"status":"maybe"}`))
	}))
	t.Cleanup(badStatus.Close)
	forged := live
	forged.Token = "forged"
	tests := []struct {
		name    string
		cfg     Config
		wantErr []string // substrings
	}{
		{"forged token", forged, []string{"HTTP 403", "unknown or ended run token"}},
		{"asker error", live, []string{"HTTP 409", "the run is ending"}},
		{"server error", Config{URL: broken.URL, Token: "t"}, []string{"HTTP 500", "database is down"}},
		{"unknown status", Config{URL: badStatus.URL, Token: "t"}, []string{`unknown status "maybe"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewClient(tt.cfg).Ask(t.Context(), Single(Question{Question: "Q?"}))
			if err == nil {
				t.Fatal("Ask succeeded, want an error")
			}
			for _, s := range tt.wantErr {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("Ask error %q does not contain %q", err, s)
				}
			}
		})
	}
}

func TestClientAskCancel(t *testing.T) {
	asker := newBlockingAsker()
	c := NewClient(relayServer(t, asker))
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := c.Ask(ctx, Single(Question{Question: "Q?"}))
		errc <- err
	}()
	<-asker.started
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("Ask error = %v, want context.Canceled", err)
	}
	// Abandoning the held request ends the server side of the ask too.
	if err := <-asker.done; !errors.Is(err, context.Canceled) {
		t.Errorf("server-side ask ended with %v, want context.Canceled", err)
	}
}

// holdingTransport holds every request until its context ends, like a relay
// server waiting for a person.
type holdingTransport struct{}

func (holdingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	<-r.Context().Done()
	return nil, context.Cause(r.Context())
}

func TestClientAskSafetyDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := NewClient(Config{URL: "http://127.0.0.1:1/ask", Token: "t", TimeoutSeconds: 60})
		c.http = &http.Client{Transport: holdingTransport{}}
		start := time.Now()
		got, err := c.Ask(t.Context(), Single(Question{Question: "Q?"}))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(Answer{Status: StatusTimedOut}, got); diff != "" {
			t.Errorf("answer mismatch (-want +got):\n%s", diff)
		}
		if got, want := time.Since(start), 90*time.Second; got != want {
			t.Errorf("gave up after %v, want %v (TimeoutSeconds + 30 s)", got, want)
		}
	})
}

// TestClientAskOutlivesTheServer: the relay goes away while it holds the
// question (its connection drops), and then nothing listens for a while;
// Ask keeps asking and returns the answer of the server that comes back,
// never an error the model would read as "nobody could be reached".
func TestClientAskOutlivesTheServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	var calls atomic.Int32
	second := make(chan struct{})
	dropping := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 2 {
			close(second)
		}
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close() // the server dies holding the question
		}
	})}
	go dropping.Serve(ln)
	c := NewClient(Config{URL: "http://" + addr + "/ask", Token: "t"})
	c.backoff = []time.Duration{20 * time.Millisecond}
	got := make(chan Answer, 1)
	errc := make(chan error, 1)
	go func() {
		a, err := c.Ask(t.Context(), Single(Question{Question: "Q?"}))
		got <- a
		errc <- err
	}()
	<-second         // asked, dropped, asked again
	dropping.Close() // now nothing listens: connection refused
	ln2, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s again: %v", addr, err)
	}
	back := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"status":"answered"}`))
	})}
	go back.Serve(ln2)
	t.Cleanup(func() { back.Close() })
	if err := <-errc; err != nil {
		t.Fatalf("Ask: %v", err)
	}
	if a := <-got; a.Status != StatusAnswered {
		t.Errorf("answer %+v, want answered", a)
	}
}
