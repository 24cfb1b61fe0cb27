package store_test

import (
	"bytes"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"parley/store/pgtest"
)

// A burst of concurrent attempts from one address, split between two
// replicas, gets exactly the budget: each attempt is one locked upsert.
func TestTakeLoginTokenBurstAcrossReplicas(t *testing.T) {
	a, b := twoReplicas(t, pgtest.New(t))
	const budget, tries = 5, 40
	var allowed atomic.Int32
	var wg sync.WaitGroup
	for i := range tries {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Go(func() {
			ok, wait, err := s.TakeLoginToken(t.Context(), "198.51.100.1", budget)
			if err != nil {
				t.Error(err)
				return
			}
			if ok {
				allowed.Add(1)
			} else if wait <= 0 || wait > time.Minute/budget {
				t.Errorf("refused with wait %v; want within (0, %v]", wait, time.Minute/budget)
			}
		})
	}
	wg.Wait()
	// A few attempts may see a token refilled while the burst runs
	// (12 s a token): at most one here.
	if got := allowed.Load(); got < budget || got > budget+1 {
		t.Errorf("%d of %d concurrent attempts allowed; want the budget, %d", got, tries, budget)
	}
	// Another address has its own budget.
	if ok, _, err := a.TakeLoginToken(t.Context(), "198.51.100.2", budget); err != nil || !ok {
		t.Errorf("another address: %v, %v; want allowed", ok, err)
	}
}

// A device is known for its own person's e-mail only, whatever its case.
func TestLoginDevices(t *testing.T) {
	s := open(t)
	ctx := t.Context()
	alice, err := s.CreateUser(ctx, "Alice@example.com", "A", "x", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateUser(ctx, "bob@example.com", "B", "x", false); err != nil {
		t.Fatal(err)
	}
	h := bytes.Repeat([]byte{7}, 32)
	if err := s.RememberLoginDevice(ctx, alice.ID, h); err != nil {
		t.Fatal(err)
	}
	for email, want := range map[string]bool{"alice@example.com": true, "ALICE@example.com": true, "bob@example.com": false} {
		if got, err := s.KnownLoginDevice(ctx, h, email); err != nil || got != want {
			t.Errorf("KnownLoginDevice(%s) = %v, %v; want %v", email, got, err, want)
		}
	}
	if got, _ := s.KnownLoginDevice(ctx, bytes.Repeat([]byte{8}, 32), "alice@example.com"); got {
		t.Error("an unknown device is known")
	}
	// Only the newest 20 of a person's devices are kept.
	for i := range 25 {
		if err := s.RememberLoginDevice(ctx, alice.ID, bytes.Repeat([]byte{byte(100 + i)}, 32)); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := s.KnownLoginDevice(ctx, bytes.Repeat([]byte{byte(124)}, 32), "alice@example.com"); !got {
		t.Error("the newest device was forgotten")
	}
	if got, _ := s.KnownLoginDevice(ctx, h, "alice@example.com"); got {
		t.Error("the oldest of 26 devices is still known; want at most 20 kept")
	}
}
