package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"parley/attach"
	"parley/runner"
	"parley/store"
)

// queueStore keeps a replica's waiting prompts and answers in the store's
// session_line (runner.QueueStore): what a replica that stopped left there
// is sent on by the next replica to lease the session (deliverQueue).
type queueStore struct{ st *store.Store }

// NewQueueStore returns the runner.QueueStore backed by st.
func NewQueueStore(st *store.Store) runner.QueueStore { return queueStore{st: st} }

func (l queueStore) Keep(ctx context.Context, sessionID string, w runner.QueuedWork) (int64, error) {
	it := store.QueueItem{SessionID: sessionID, Kind: store.QueuePrompt, Text: w.Text, By: w.By, ByID: w.ByID, Parley: w.Parley}
	var err error
	if it.Attachments, err = attach.Keep(w.Content, w.Attached); err != nil { // ids, not bytes (restoreAttachments)
		return 0, err
	}
	if w.IsAnswer() {
		resp, err := json.Marshal(w.Resp)
		if err != nil {
			return 0, fmt.Errorf("encode the answer: %w", err)
		}
		it = store.QueueItem{SessionID: sessionID, Kind: store.QueueAnswer, InputID: w.InputID, Response: resp}
	}
	return l.st.KeepQueued(ctx, it)
}

func (l queueStore) Left(ctx context.Context, id int64) (bool, error) { return l.st.LeftQueue(ctx, id) }

func (l queueStore) Release(ctx context.Context, id int64) error { return l.st.ReleaseQueued(ctx, id) }

func (l queueStore) Serves(ctx context.Context, id int64) (bool, error) {
	return l.st.ServesQueued(ctx, id)
}

// queuedWork is the runner's view of a kept queue item.
func queuedWork(it store.QueueItem) (runner.QueuedWork, error) {
	if it.Kind != store.QueueAnswer {
		return runner.QueuedWork{Text: it.Text, By: it.By, ByID: it.ByID, Item: it.ID, Parley: it.Parley}, nil
	}
	w := runner.QueuedWork{InputID: it.InputID, Item: it.ID}
	if err := json.Unmarshal(it.Response, &w.Resp); err != nil {
		return w, fmt.Errorf("decode the kept answer %d: %w", it.ID, err)
	}
	return w, nil
}

// deliverQueue sends on the prompts and answers no live replica serves
// (left by replicas that stopped or shut down, or released for later),
// session by session, each under this replica's lease; it runs at start and
// on every heartbeat, until the replica drains. A session another live
// replica holds is left to it: its next heartbeat, or its next message,
// sends them on (afterQueue).
func (n *Node) deliverQueue(ctx context.Context) {
	if n.Supervisor.Draining() {
		// What a drain released is for the replica that starts next: a
		// heartbeat of this one, shutting down, would lease the session to
		// itself (no other is live) and claim it, where nothing can start.
		return
	}
	ids, err := n.Store.SessionsWithOrphanedQueue(ctx)
	if err != nil {
		n.Log.Error("find prompts and answers left in line", "err", err)
		return
	}
	for _, id := range ids {
		owner, err := n.Store.AcquireLease(ctx, id)
		if err != nil {
			n.Log.Error("take the lease of a session with prompts left in line", "session_id", id, "err", err)
			continue
		}
		if owner == n.id {
			n.wg.Go(func() { n.replayQueue(context.WithoutCancel(ctx), id) })
		}
	}
}

// afterQueue does a prompt or an answer for a session this replica owns
// after what was left in the queue for the session, so that nothing overtakes
// it.
func (n *Node) afterQueue(ctx context.Context, sessionID string, do func() error) error {
	unlock, err := n.queueLocks.lock(ctx, sessionID)
	if err != nil {
		return err
	}
	defer unlock()
	if has, err := n.Store.HasOrphanedQueue(ctx, sessionID); err != nil {
		n.Log.Warn("look for prompts left in line", "session_id", sessionID, "err", err)
	} else if has {
		n.sendQueue(ctx, sessionID)
	}
	return do()
}

// replayQueue sends the session's orphaned queue items on (sendQueue).
func (n *Node) replayQueue(ctx context.Context, sessionID string) {
	unlock, err := n.queueLocks.lock(ctx, sessionID)
	if err != nil {
		return // the queue stays; the next heartbeat sends it on
	}
	defer unlock()
	n.sendQueue(ctx, sessionID)
}

// sendQueue sends the session's orphaned queue items on, in order, on this
// replica, which holds the session's lease and the session's lock. When
// one cannot go now, it and those after it stay in the queue: for the replica
// that takes the session next when this one drains, else released, for
// the next heartbeat.
func (n *Node) sendQueue(ctx context.Context, sessionID string) {
	cctx, cancel := context.WithTimeout(ctx, queueClaimWait)
	items, err := n.Store.ClaimQueue(cctx, sessionID)
	cancel()
	if err != nil {
		n.Log.Error("claim prompts and answers left in line", "session_id", sessionID, "err", err)
		return
	}
	if len(items) == 0 {
		return
	}
	n.Log.Info("sending on prompts and answers left in line", "session_id", sessionID, "items", len(items))
	start := n.Starter(sessionID)
	for i, it := range items {
		w, err := queuedWork(it)
		if err == nil {
			err = n.restoreAttachments(ctx, it.Attachments, &w)
		}
		if err != nil && !runner.RetryLater(err) { // it can never be sent
			n.Log.Error("drop a line item", "session_id", sessionID, "line", it.ID, "err", err)
			_, err = n.Store.LeftQueue(ctx, it.ID)
		} else if err == nil {
			ictx, cancel := context.WithTimeout(ctx, handoverWait)
			err = n.Supervisor.Replay(ictx, sessionID, start, w)
			cancel()
		}
		switch {
		case errors.Is(err, runner.ErrNotPending) || errors.Is(err, runner.ErrNotFound):
			n.Log.Info("a line item was dropped: its ask is closed", "session_id", sessionID, "line", it.ID, "err", err)
		case errors.Is(err, runner.ErrDraining):
			return // the rest is handed over with the session, or left when this replica leaves
		case runner.RetryLater(err):
			n.Log.Warn("prompts and answers left in line could not be sent now; trying again later",
				"session_id", sessionID, "err", err)
			ids := make([]int64, 0, len(items)-i)
			for _, it := range items[i:] {
				ids = append(ids, it.ID)
			}
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), queueClaimWait)
			err := n.Store.ReleaseQueued(rctx, ids...)
			cancel()
			if err != nil {
				n.Log.Error("release prompts and answers left in line", "session_id", sessionID, "err", err)
			}
			return
		case err != nil:
			n.Log.Error("send on a prompt or an answer left in line", "session_id", sessionID, "line", it.ID, "err", err)
		}
	}
}

// queueClaimWait bounds one claim or release of a session's queue.
const queueClaimWait = 10 * time.Second

// sessionLocks serialise, per session, sending on what was left in the queue
// with the session's new prompts and answers.
type sessionLocks struct {
	mu sync.Mutex
	m  map[string]*sessionLock
}

type sessionLock struct {
	held  chan struct{} // holds a value while locked
	users int           // under sessionLocks.mu
}

// lock locks the session's lock, or gives up when ctx ends first; unlock
// unlocks it.
func (l *sessionLocks) lock(ctx context.Context, sessionID string) (unlock func(), err error) {
	l.mu.Lock()
	if l.m == nil {
		l.m = map[string]*sessionLock{}
	}
	sl := l.m[sessionID]
	if sl == nil {
		sl = &sessionLock{held: make(chan struct{}, 1)}
		l.m[sessionID] = sl
	}
	sl.users++
	l.mu.Unlock()
	done := func() {
		l.mu.Lock()
		if sl.users--; sl.users == 0 {
			delete(l.m, sessionID)
		}
		l.mu.Unlock()
	}
	select {
	case sl.held <- struct{}{}:
		return func() { <-sl.held; done() }, nil
	case <-ctx.Done():
		done()
		return nil, ctx.Err()
	}
}
