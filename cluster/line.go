package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

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
	it := store.LineItem{SessionID: sessionID, Kind: store.LinePrompt, Text: w.Text, By: w.By, ByID: w.ByID}
	if w.IsAnswer() {
		resp, err := json.Marshal(w.Resp)
		if err != nil {
			return 0, fmt.Errorf("encode the answer: %w", err)
		}
		it = store.LineItem{SessionID: sessionID, Kind: store.LineAnswer, InputID: w.InputID, Response: resp}
	}
	return l.st.KeepInLine(ctx, it)
}

func (l line) Left(ctx context.Context, id int64) error { return l.st.LeftLine(ctx, id) }

// queuedWork is the runner's view of a kept line item.
func queuedWork(it store.LineItem) (runner.QueuedWork, error) {
	if it.Kind != store.LineAnswer {
		return runner.QueuedWork{Text: it.Text, By: it.By, ByID: it.ByID, Line: it.ID}, nil
	}
	w := runner.QueuedWork{InputID: it.InputID, Line: it.ID}
	if err := json.Unmarshal(it.Response, &w.Resp); err != nil {
		return w, fmt.Errorf("decode the kept answer %d: %w", it.ID, err)
	}
	return w, nil
}

// deliverLine sends on the prompts and answers that waited in line on
// replicas that stopped (or shut down with no other replica to take
// them), session by session, each under this replica's lease. Sessions a
// live replica holds are left to it.
func (n *Node) deliverLine(ctx context.Context) {
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

// replayLine sends the session's orphaned line items on, in order, on this
// replica, which holds the session's lease. One that cannot go now (this
// replica began to shut down) stays for the next replica, with those after it.
func (n *Node) replayLine(ctx context.Context, sessionID string) {
	ctx, cancel := context.WithTimeout(ctx, handoverWait)
	defer cancel()
	items, err := n.Store.ClaimLine(ctx, sessionID)
	if err != nil {
		n.Log.Error("claim prompts and answers left in line", "session_id", sessionID, "err", err)
		return
	}
	if len(items) == 0 {
		return
	}
	n.Log.Info("sending on prompts and answers left in line by a replica that stopped",
		"session_id", sessionID, "items", len(items))
	start := n.Starter(sessionID)
	for _, it := range items {
		w, err := queuedWork(it)
		if err != nil { // it can never be sent
			n.Log.Error("drop a line item", "session_id", sessionID, "line", it.ID, "err", err)
			err = n.Store.LeftLine(ctx, it.ID)
		} else {
			err = n.Supervisor.Replay(ctx, sessionID, start, w)
		}
		switch {
		case errors.Is(err, runner.ErrNotPending) || errors.Is(err, runner.ErrNotFound):
			n.Log.Info("an answer left in line was dropped: its ask is closed", "session_id", sessionID,
				"input_id", w.InputID, "err", err)
		case errors.Is(err, runner.ErrDraining):
			return // the rest stays in line, for the replica that takes the session next
		case err != nil:
			n.Log.Error("send on a prompt or an answer left in line", "session_id", sessionID, "line", it.ID, "err", err)
		}
	}
}
