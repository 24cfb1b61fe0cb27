package cluster

import "context"

// deliverOwed starts again the sessions that hold answers Claude never got
// (their process or their replica died after the answer was saved), each
// under this replica's lease: nothing else would start them before someone
// writes, and the new run sends the answers first. Sessions a live replica
// holds are left to it.
func (n *Node) deliverOwed(ctx context.Context) {
	ids, err := n.Store.SessionsOwedAnswers(ctx)
	if err != nil {
		n.Log.Error("find sessions owed answers", "err", err)
		return
	}
	var mine []string
	for _, id := range ids {
		owner, err := n.Store.AcquireLease(ctx, id)
		if err != nil {
			n.Log.Error("take the lease of a session owed answers", "session_id", id, "err", err)
			continue
		}
		if owner == n.id {
			mine = append(mine, id)
		}
	}
	if len(mine) > 0 {
		n.Log.Info("resuming sessions to deliver answers Claude never got", "sessions", len(mine))
		n.Supervisor.DeliverOwed(mine, n.Starter)
	}
}
