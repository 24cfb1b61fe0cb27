package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"parley/runner"
)

// handoverWait bounds one takeover of a session handed over.
const handoverWait = 2 * time.Minute

// Drain is a graceful shutdown's first half. The replica takes no new
// process (sessions that need one are leased to other replicas) and gives
// up the leases of its sessions without a process; turns in flight get up
// to grace to finish; then every run ends, and the sessions that still
// had work (an open ask the process waited for, a long turn, prompts and
// answers waiting in the queue for a slot) are handed over: another live
// replica takes each at once (--resume), and the waiting prompts and
// answers are given to it, in order. With no other replica, they resume on
// their next message, as after a restart, and what waited in the queue is sent
// on by the next replica to start (deliverQueue).
// Leave follows.
func (n *Node) Drain(ctx context.Context, grace time.Duration) error {
	n.Supervisor.BeginDrain(ctx)
	if err := n.Store.StartDraining(ctx, n.Supervisor.Sessions()); err != nil {
		return err
	}
	handed := n.Supervisor.Drain(ctx, grace)
	ids := make([]string, len(handed))
	for i, h := range handed {
		ids[i] = h.SessionID
	}
	if err := n.Store.HandOver(ctx, ids); err != nil {
		return err
	}
	if len(ids) > 0 {
		n.Log.Info("handed sessions over to the other replicas", "sessions", len(ids))
	}
	var errs []error
	for _, h := range handed {
		for _, w := range h.Work {
			if w.Item != 0 {
				continue // kept: HandOver released it to whoever takes the session
			}
			if err := n.replay(ctx, h.SessionID, w); err != nil {
				// The rest would arrive without what came before it.
				errs = append(errs, fmt.Errorf("move queued work of session %s: %w", h.SessionID, err))
				break
			}
		}
	}
	return errors.Join(errs...)
}

// replay gives one piece of a handed-over session's queued work to the
// session's new owner.
func (n *Node) replay(ctx context.Context, sessionID string, w runner.QueuedWork) error {
	start := n.Starter(sessionID)
	if !w.IsAnswer() {
		return n.promptWork(ctx, sessionID, start, w)
	}
	err := n.Answer(ctx, sessionID, start, w.InputID, w.Resp)
	if errors.Is(err, runner.ErrNotPending) || errors.Is(err, runner.ErrNotFound) {
		n.Log.Info("an answer that waited in line was not moved: its ask is closed", "session_id", sessionID,
			"input_id", w.InputID, "err", err)
		return nil
	}
	return err
}

// handedOver takes over a session that a replica shutting down handed
// over ("session_id replica_id"): the first replica to take its lease
// starts its process at once, so its open asks have a live process again.
func (n *Node) handedOver(payload string) {
	sessionID, from, _ := strings.Cut(payload, " ")
	if from == n.id || sessionID == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), handoverWait)
	defer cancel()
	owner, err := n.Store.AcquireLease(ctx, sessionID)
	if err != nil {
		n.Log.Error("take over a session handed over", "session_id", sessionID, "err", err)
		return
	}
	if owner != n.id {
		return // another replica was first
	}
	defer n.replayQueue(context.WithoutCancel(ctx), sessionID) // what waited in the queue there, in order (each item has its own deadline)
	if err := n.Supervisor.Resume(ctx, sessionID, n.Starter(sessionID)); err != nil {
		n.Log.Error("resume a session handed over", "session_id", sessionID, "from", from, "err", err)
		return
	}
	n.Log.Info("took over a session from a replica that shut down", "session_id", sessionID, "from", from)
	n.TakenOver(1)
}

// drained says local work failed because this replica is shutting down:
// the session's lease goes, for route to lease it to another replica.
func (n *Node) drained(ctx context.Context, sessionID string, err error) bool {
	if !errors.Is(err, runner.ErrDraining) {
		return false
	}
	if rerr := n.Store.ReleaseLease(ctx, sessionID); rerr != nil {
		n.Log.Warn("release the lease of a draining replica", "session_id", sessionID, "err", rerr)
		return false
	}
	return true
}
