package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"parley/runner"
	"parley/store"
)

// line keeps a replica's waiting prompts and answers in the store's
// session_line (runner.LineStore): what a replica that stopped left there
// is sent on by the next replica to lease the session (deliverLine).
type line struct{ st *store.Store }

// NewLine returns the runner.LineStore backed by st.
func NewLine(st *store.Store) runner.LineStore { return line{st: st} }

func (l line) Keep(ctx context.Context, sessionID string, w runner.QueuedWork) (int64, error) {
	it := store.LineItem{SessionID: sessionID, Kind: store.LinePrompt, Text: w.Text, By: w.By, ByID: w.ByID, Parley: w.Parley}
	if w.IsAnswer() {
		resp, err := json.Marshal(w.Resp)
		if err != nil {
			return 0, fmt.Errorf("encode the answer: %w", err)
		}
		it = store.LineItem{SessionID: sessionID, Kind: store.LineAnswer, InputID: w.InputID, Response: resp}
	}
	return l.st.KeepInLine(ctx, it)
}

func (l line) Left(ctx context.Context, id int64) (bool, error) { return l.st.LeftLine(ctx, id) }

func (l line) Release(ctx context.Context, id int64) error { return l.st.ReleaseLine(ctx, id) }

func (l line) Serves(ctx context.Context, id int64) (bool, error) { return l.st.ServesLine(ctx, id) }

// queuedWork is the runner's view of a kept line item.
func queuedWork(it store.LineItem) (runner.QueuedWork, error) {
	if it.Kind != store.LineAnswer {
		return runner.QueuedWork{Text: it.Text, By: it.By, ByID: it.ByID, Line: it.ID, Parley: it.Parley}, nil
	}
	w := runner.QueuedWork{InputID: it.InputID, Line: it.ID}
	if err := json.Unmarshal(it.Response, &w.Resp); err != nil {
		return w, fmt.Errorf("decode the kept answer %d: %w", it.ID, err)
	}
	return w, nil
}

// deliverLine sends on the prompts and answers no live replica serves
// (left by replicas that stopped or shut down, or released for later),
// session by session, each under this replica's lease; it runs at start and
// on every heartbeat, until the replica drains. A session another live
// replica holds is left to it: its next heartbeat, or its next message,
// sends them on (afterLine).
func (n *Node) deliverLine(ctx context.Context) {
	if n.Supervisor.Draining() {
		// What a drain released is for the replica that starts next: a
		// heartbeat of this one, shutting down, would lease the session to
		// itself (no other is live) and claim it, where nothing can start.
		return
	}
	ids, err := n.Store.SessionsWithOrphanedLine(ctx)
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
			n.wg.Go(func() { n.replayLine(context.WithoutCancel(ctx), id) })
		}
	}
}

// afterLine does a prompt or an answer for a session this replica owns
// after what was left in line for the session, so that nothing overtakes
// it.
func (n *Node) afterLine(ctx context.Context, sessionID string, do func() error) error {
	unlock, err := n.lines.lock(ctx, sessionID)
	if err != nil {
		return err
	}
	defer unlock()
	if has, err := n.Store.HasOrphanedLine(ctx, sessionID); err != nil {
		n.Log.Warn("look for prompts left in line", "session_id", sessionID, "err", err)
	} else if has {
		n.sendLine(ctx, sessionID)
	}
	return do()
}

// replayLine sends the session's orphaned line items on (sendLine).
func (n *Node) replayLine(ctx context.Context, sessionID string) {
	unlock, err := n.lines.lock(ctx, sessionID)
	if err != nil {
		return // the line stays; the next heartbeat sends it on
	}
	defer unlock()
	n.sendLine(ctx, sessionID)
}

// sendLine sends the session's orphaned line items on, in order, on this
// replica, which holds the session's lease and the session's lock. When
// one cannot go now, it and those after it stay in line: for the replica
// that takes the session next when this one drains, else released, for
// the next heartbeat.
func (n *Node) sendLine(ctx context.Context, sessionID string) {
	cctx, cancel := context.WithTimeout(ctx, lineClaimWait)
	items, err := n.Store.ClaimLine(cctx, sessionID)
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
		if err != nil { // it can never be sent
			n.Log.Error("drop a line item", "session_id", sessionID, "line", it.ID, "err", err)
			_, err = n.Store.LeftLine(ctx, it.ID)
		} else {
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
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lineClaimWait)
			err := n.Store.ReleaseLine(rctx, ids...)
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

// lineClaimWait bounds one claim or release of a session's line.
const lineClaimWait = 10 * time.Second

// sessionLocks serialise, per session, sending on what was left in line
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
