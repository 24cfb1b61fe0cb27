package server

import (
	"context"
	"errors"
	"net/http"
)

// The close codes of Parley's WebSockets: the contract with the page
// (static/app.js and static/ask.js). A page reconnects, with a jittered
// backoff capped at a few seconds, after ANY close except these three:
//
//   - closeSignedOut (4001): the sign-in ended (signed out, revoked,
//     expired, account deleted). The page says so and offers to sign in.
//   - closeRemoved (4003): the viewer may no longer see this session (removed
//     from the project, or the session is gone). The page says so.
//   - 1008 (policy violation): Parley refuses the socket for a reason a
//     reconnect cannot fix (too many open tabs); the reason says what to do.
//
// Everything else — 1001 (server restart), 1006 (connection lost), 1009,
// 1011, 1012, unknown codes — is recoverable: the page reconnects and
// catches up from the event log, so nothing is lost.
const (
	closeSignedOut = 4001
	closeRemoved   = 4003
)

// Close reasons for closeSignedOut and closeRemoved; a close frame's reason
// must fit in 123 bytes.
const (
	reasonSignedOut = "Your sign-in has ended: sign in again to go on."
	reasonRemoved   = "You no longer have access to this session."
)

// accessEnded maps the error of a periodic access check to the close that
// ends the socket. ok is false for any other error: a database error is not
// "access ended", so the socket stays open and is checked again later.
func accessEnded(err error) (code int, reason string, ok bool) {
	var he *httpError
	switch {
	case isSessionGone(err): // session_delete.go
		return closeRemoved, reasonDeleted, true
	case errors.Is(err, errSignedOut):
		return closeSignedOut, reasonSignedOut, true
	case errors.Is(err, errNotFound):
		return closeRemoved, reasonRemoved, true
	case errors.As(err, &he) && he.status == http.StatusForbidden:
		return closeRemoved, reasonRemoved, true
	}
	return 0, "", false
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

// signInEnded is the inbox socket's periodic check: true only when the
// request's sign-in no longer names user id (signed out, expired, account
// deleted). A database error is not an end: the check runs again at the
// next ping.
func (s *Server) signInEnded(ctx context.Context, r *http.Request, id int64) bool {
	ctx, cancel := context.WithTimeout(ctx, writeWait)
	defer cancel()
	v, err := s.lookupViewer(ctx, r)
	if err != nil {
		s.log.Warn("websocket sign-in check failed; checking again at the next ping", "err", err)
		return false
	}
	return v.ID != id
}
