package cluster

import (
	"context"
	"strconv"
	"strings"
	"time"

	"parley/runner"
)

// fetchWait bounds one read of announced events.
const fetchWait = 10 * time.Second

// eventsWritten re-publishes to this replica's browsers the events another
// replica (or a takeover) wrote: "session_id first last application_name".
// It runs on the LISTEN goroutine, so it only queues the batch for the
// session's feed: a read of the log that waits (a busy database) holds up
// that session's later batches, never the requests, replies and signals
// behind it on the connection, nor another session's events.
func (n *Node) eventsWritten(payload string) {
	f := strings.Fields(payload)
	if len(f) < 3 {
		return
	}
	b := batch{sessionID: f[0]}
	var err1, err2 error
	b.first, err1 = strconv.ParseInt(f[1], 10, 64)
	b.last, err2 = strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil || b.last < b.first {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	q, running := n.feeds[b.sessionID]
	n.feeds[b.sessionID] = append(q, b)
	if !running {
		n.wg.Go(func() { n.feed(b.sessionID) })
	}
}

// batch is the seqs of one NOTIFY of a session's events.
type batch struct {
	sessionID   string
	first, last int64
}

// feed shows a session's announced batches in the order announced, those
// that waited meanwhile in one read, until none is left.
func (n *Node) feed(sessionID string) {
	for {
		n.mu.Lock()
		q := n.feeds[sessionID]
		if len(q) == 0 {
			delete(n.feeds, sessionID)
			n.mu.Unlock()
			return
		}
		n.feeds[sessionID] = q[:0:0]
		n.mu.Unlock()
		first, last := q[0].first, q[0].last
		for _, b := range q[1:] {
			first, last = min(first, b.first), max(last, b.last)
		}
		n.show(sessionID, first, last)
	}
}

// show publishes the session's events first..last here. A session whose
// run lives here was published by its run loop already; of one that
// nothing here watches only its asks are read, if an inbox of its project
// is open here, and else nothing (a page, inbox or MCP client that starts
// to watch it later reads the log itself).
func (n *Node) show(sessionID string, first, last int64) {
	if _, local := n.Supervisor.Live(sessionID); local {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), fetchWait)
	defer cancel()
	projectID, err := n.projectOf(ctx, sessionID)
	if err != nil {
		n.Log.Warn("read events another replica wrote", "session_id", sessionID, "err", err)
		return
	}
	session, asks := n.local().Watching(sessionID, projectID)
	var only []string
	switch {
	case session:
	case asks:
		only = askTypes
	default:
		return
	}
	// The run loops' pool: this is live traffic, never behind a replay.
	live := n.Store.Live()
	evs, err := live.EventsBetween(ctx, sessionID, first, last, only...)
	if err != nil {
		n.Log.Warn("read events another replica wrote", "session_id", sessionID, "err", err)
		return
	}
	for _, e := range evs {
		n.Publisher.Publish(runner.Event{SessionID: e.SessionID, ProjectID: projectID, Seq: e.Seq, Type: e.Type,
			Payload: e.Payload, CreatedAt: e.CreatedAt})
	}
}

// askTypes are the events an inbox is told of (server.publisher).
var askTypes = []string{runner.TypeInputRequested, runner.TypeInputResolved, runner.TypeInputDetached}

// projectOf returns the session's project, remembered: sessions never move.
func (n *Node) projectOf(ctx context.Context, sessionID string) (int64, error) {
	n.mu.Lock()
	id, ok := n.projects[sessionID]
	n.mu.Unlock()
	if ok {
		return id, nil
	}
	sess, err := n.Store.GetSession(ctx, sessionID)
	if err != nil {
		return 0, err
	}
	n.mu.Lock()
	if len(n.projects) > 100_000 {
		clear(n.projects) // a bound, not an eviction policy
	}
	n.projects[sessionID] = sess.ProjectID
	n.mu.Unlock()
	return sess.ProjectID, nil
}
