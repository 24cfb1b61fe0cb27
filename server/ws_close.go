package server

import (
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
	case errors.Is(err, errSignedOut):
		return closeSignedOut, reasonSignedOut, true
	case errors.Is(err, errNotFound):
		return closeRemoved, reasonRemoved, true
	case errors.As(err, &he) && he.status == http.StatusForbidden:
		return closeRemoved, reasonRemoved, true
	}
	return 0, "", false
}
