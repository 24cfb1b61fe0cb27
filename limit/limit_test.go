package limit

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func TestRateBurstThenRefill(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := NewRate(6) // one token every 10 s
		for i := range 6 {
			if ok, _ := l.Allow("ann"); !ok {
				t.Fatalf("event %d of the burst refused", i+1)
			}
		}
		ok, wait := l.Allow("ann")
		if ok || wait != 10*time.Second {
			t.Fatalf("7th event: ok=%v wait=%v; want refused, 10s", ok, wait)
		}
		if ok, _ := l.Allow("bob"); !ok {
			t.Fatal("another key is limited by ann's events")
		}
		time.Sleep(9 * time.Second)
		if ok, _ := l.Allow("ann"); ok {
			t.Fatal("allowed before a token refilled")
		}
		time.Sleep(time.Second)
		if ok, _ := l.Allow("ann"); !ok {
			t.Fatal("refused after a token refilled")
		}
	})
}

func TestRateZeroIsUnlimited(t *testing.T) {
	l := NewRate(0)
	for range 1000 {
		if ok, _ := l.Allow("x"); !ok {
			t.Fatal("an unlimited rate refused")
		}
	}
}

func TestRateForgetsQuietKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := NewRate(60)
		for i := range maxBuckets {
			l.Allow(strings.Repeat("k", 1) + time.Duration(i).String())
		}
		time.Sleep(2 * time.Minute)
		l.Allow("new")
		if n := len(l.buckets); n != 1 {
			t.Fatalf("%d buckets kept; want only the new one", n)
		}
	})
}

func TestConnsCapPerKey(t *testing.T) {
	c := NewConns(2)
	r1, ok1 := c.Acquire("ann")
	_, ok2 := c.Acquire("ann")
	_, ok3 := c.Acquire("ann")
	if !ok1 || !ok2 || ok3 {
		t.Fatalf("acquires = %v %v %v; want true true false", ok1, ok2, ok3)
	}
	if _, ok := c.Acquire("bob"); !ok {
		t.Fatal("bob is limited by ann's connections")
	}
	r1()
	r1() // idempotent: must not free a second slot
	if _, ok := c.Acquire("ann"); !ok {
		t.Fatal("a released connection was not given back")
	}
	if _, ok := c.Acquire("ann"); ok {
		t.Fatal("a double release freed two connections")
	}
}

func TestPoolBoundsConcurrency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := NewPool(2, time.Second)
		var mu sync.Mutex
		running, peak := 0, 0
		var wg sync.WaitGroup
		errs := make(chan error, 10)
		for range 10 {
			wg.Go(func() {
				errs <- p.Do(t.Context(), func() {
					mu.Lock()
					running++
					peak = max(peak, running)
					mu.Unlock()
					time.Sleep(300 * time.Millisecond)
					mu.Lock()
					running--
					mu.Unlock()
				})
			})
		}
		wg.Wait()
		close(errs)
		var ok, busy int
		for err := range errs {
			switch {
			case err == nil:
				ok++
			case errors.Is(err, ErrBusy):
				busy++
			default:
				t.Fatal(err)
			}
		}
		// 2 workers, 300 ms each, 1 s of waiting: 4 rounds (0, 300, 600, 900 ms) run.
		if peak != 2 || ok != 8 || busy != 2 {
			t.Fatalf("peak=%d ok=%d busy=%d; want 2, 8, 2", peak, ok, busy)
		}
	})
}

func TestPoolHonoursContext(t *testing.T) {
	p := NewPool(1, time.Hour)
	block, started := make(chan struct{}), make(chan struct{})
	go p.Do(context.Background(), func() { close(started); <-block })
	defer close(block)
	<-started
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if err := p.Do(ctx, func() {}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v; want the context's", err)
	}
}

func TestBody(t *testing.T) {
	echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("handler read: %v", err)
		}
		w.Write(b)
	})
	big := func(r *http.Request) int64 {
		if r.URL.Path == "/big" {
			return 100
		}
		return 0
	}
	h := Body(10, big, func(w http.ResponseWriter, r *http.Request, n int64) {
		http.Error(w, "too large: limit "+Size(n), http.StatusRequestEntityTooLarge)
	}, echo)
	tests := []struct {
		name, path, body string
		chunked          bool
		want             int
	}{
		{"within the default", "/", "0123456789", false, 200},
		{"over the default", "/", "0123456789x", false, 413},
		{"over the default, chunked", "/", "0123456789x", true, 413},
		{"within a route's larger limit", "/big", strings.Repeat("x", 100), false, 200},
		{"over a route's larger limit", "/big", strings.Repeat("x", 101), true, 413},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var body io.Reader = strings.NewReader(tc.body)
			if tc.chunked {
				body = io.MultiReader(body) // hides the length: sent chunked
			}
			r := httptest.NewRequest("POST", tc.path, body)
			if tc.chunked {
				r.ContentLength = -1
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tc.want {
				t.Fatalf("status %d; want %d (%s)", w.Code, tc.want, w.Body)
			}
			if tc.want == 200 && w.Body.String() != tc.body {
				t.Fatalf("handler saw %q", w.Body)
			}
		})
	}
}

func TestMaxRunsFor(t *testing.T) {
	tests := []struct {
		mem  int64
		want int
	}{
		{0, 4},
		{1 << 30, 2},   // 1 GB: 512 MB headroom, 2 runs
		{512 << 20, 1}, // less than the headroom: still one
		{24 << 30, 83}, // 24 GB: 18 GB usable
		{8 << 30, 27},
	}
	for _, tc := range tests {
		if got := MaxRunsFor(tc.mem); got != tc.want {
			t.Errorf("MaxRunsFor(%d MB) = %d; want %d", tc.mem>>20, got, tc.want)
		}
	}
}
