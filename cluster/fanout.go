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
// A session whose run lives here was published by its run loop already;
// of one that nothing here watches only its asks are read, if an inbox of
// its project is open here, and else nothing (a page, inbox or MCP client
// that starts to watch it later reads the log itself).
func (n *Node) eventsWritten(payload string) {
	f := strings.Fields(payload)
	if len(f) < 3 {
		return
	}
	sessionID := f[0]
	first, err1 := strconv.ParseInt(f[1], 10, 64)
	last, err2 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil {
		return
	}
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
