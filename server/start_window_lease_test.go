package server

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"parley/cluster"
	"parley/runner"
	"parley/runner/fakeapi"
	"parley/store"
)

// TestLeaseLossEndsAStartInFlight: a replica whose lease lapses while a
// resume ahead of one of its sessions is in its window (its process
// spawned, primed, or its run recorded and not yet live), and whose
// session another replica takes over meanwhile, ends that start at its
// next heartbeat, as it fences its live runs: the start never goes live on
// a replica that no longer owns the session, its process is reaped, and
// no run of it is left open. Before the fix the heartbeat's fence saw live
// runs only, and the start went live.
func TestLeaseLossEndsAStartInFlight(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "First reply."}}, envOptions{quiet: true, perTurn: true})
	const ttl = 900 * time.Millisecond
	node := cluster.New(cluster.Config{TTL: ttl, DataDir: e.dataDir}, cluster.Deps{Store: e.st, Supervisor: e.sup,
		Publisher: e.pub, Log: slog.New(slog.DiscardHandler), Starter: func(string) runner.Starter { return nil }})
	e.sup.SetLeaseCheck(node.LeaseHeld)
	ctx, stopNode := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = node.Run(ctx) }()
	defer func() { stopNode(); <-done }()
	for deadline := time.Now().Add(10 * time.Second); !node.LeaseHeld(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the node's first heartbeat gave no lease")
		}
	}
	other, err := store.Open(t.Context(), e.dbURL) // another replica, B
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.Heartbeat(t.Context(), e.dataDir, time.Hour); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(t.Context(), e.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	h := e.hookStarts()
	for _, point := range windowPoints {
		s := e.aheadSession()
		sess, err := e.st.GetSession(t.Context(), s.ID)
		if err != nil {
			t.Fatal(err)
		}
		if owner, err := e.st.AcquireLease(t.Context(), s.ID); err != nil || owner != e.st.Replica() {
			t.Fatalf("the session's lease: owner %q, %v", owner, err)
		}
		h.hold(s.ID, point, func() {
			h.mu.Lock()
			noted := h.noted
			h.mu.Unlock()
			// A's lease lapses (as in a long pause) and B takes its
			// sessions over; A's next heartbeat finds it out. A heartbeat
			// of A between the lapse and the takeover renews the lease
			// (nobody took anything over yet, as in production): then
			// lapse it again.
			var dead []string
			for try := 0; try < 20 && len(dead) == 0; try++ {
				if _, err := conn.Exec(t.Context(), `UPDATE replicas SET expires_at = now() - interval '1 second' WHERE id = $1`, e.st.Replica()); err != nil {
					t.Error(err)
				}
				var err error
				if dead, _, err = other.TakeOver(t.Context()); err != nil {
					t.Error(err)
				}
			}
			if len(dead) == 0 {
				t.Errorf("B's takeover: no dead replica in 20 tries; want A")
			}
			select {
			case <-noted: // the heartbeat's fence marked the start
			case <-time.After(10 * ttl): // (before the fix it never did)
			}
		})
		err = e.sup.ResumeAhead(t.Context(), s.ID, e.srv.starter(sess))
		t.Logf("lease lost when %s: the start ended with %v", point, err)
		if _, live := e.sup.Live(s.ID); live {
			t.Fatalf("lease lost when %s: the start went live on a replica that no longer owns the session", point)
		}
		if pids := pidsWith(sess.ClaudeSessionID); len(pids) > 0 {
			t.Fatalf("lease lost when %s: processes %v of the start run", point, pids)
		}
		if open, err := e.st.HasOpenRun(t.Context(), s.ID); err != nil || open {
			t.Fatalf("lease lost when %s: a run of the session is left open (%v)", point, err)
		}
		if !node.LeaseHeld() {
			t.Fatalf("lease lost when %s: A's lease is not held again after the fence", point)
		}
	}
}
