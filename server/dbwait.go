package server

import (
	"bytes"
	"context"

	"parley/views"
)

// DatabaseWaiting implements runner.DatabaseObserver: a run on this replica
// is waiting for the database (its writes are retried and Claude's output
// held), or its writes succeed again. The status goes through the hub to
// this replica's viewers of the session; it cannot be stored, the database
// being away, so a page loaded later does not show it.
func (p publisher) DatabaseWaiting(sessionID string, waiting bool) {
	var buf bytes.Buffer
	_ = views.DatabaseWait(waiting, true).Render(context.Background(), &buf)
	p.hub.Publish(sessionID, Frame{Data: buf.Bytes(), Kind: "db_wait"})
}

// accessEnded runs a socket's periodic access check and reports whether
// access really ended: a sign-out or deleted account, a membership removed,
// a session deleted (the check's own answers, httpErrors). Any other error
// (the database away, or too slow to answer within writeWait) is not: the
// socket stays open and the check runs again at the next ping.
func (c *wsConn) accessEnded(ctx context.Context) (code int, reason string, ended bool) {
	ctx, cancel := context.WithTimeout(ctx, writeWait)
	defer cancel()
	_, _, err := c.s.authorizeSession(ctx, c.r, c.sess.ID, actView)
	if err == nil {
		return 0, "", false
	}
	if code, reason, ended := accessEnded(err); ended {
		return code, reason, true
	}
	c.s.log.Warn("websocket access check failed; checking again at the next ping", "session_id", c.sess.ID, "err", err)
	return 0, "", false
}
