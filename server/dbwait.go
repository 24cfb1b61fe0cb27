package server

import (
	"bytes"
	"context"
	"errors"

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

// accessEnded reports whether err, from a socket's periodic access check,
// is a real end of access: a sign-out or deleted account, a membership
// removed, a session deleted (the checks' own answers, httpErrors). Any
// other error (the database away) is not: the socket stays open and the
// check runs again at the next ping.
func accessEnded(err error) bool {
	var he *httpError
	return errors.As(err, &he)
}
