package server

import (
	"time"

	"github.com/gorilla/websocket"
)

// prepare makes, once for every socket, the message a socket sends when f
// is all it has to send: rendered (a delta's fast-path fragment), framed
// and, were compression on, compressed once (websocket.PreparedMessage).
// A socket that fell behind merges frames into a message of its own.
func prepare(f Frame) Frame {
	if f.prep != nil || (len(f.Data) == 0 && !f.IsDelta) {
		return f // a poke for the inboxes: no message
	}
	var co coalescer
	co.add(f)
	if pm, err := websocket.NewPreparedMessage(websocket.TextMessage, co.take()); err == nil {
		f.prep = pm
	}
	return f
}

// tryWrite writes f straight to the socket for a large audience's fan-out
// (hub_fanout.go) when the socket is live, its writer idle, nothing is
// queued for it in s, f is the next frame and fits in the socket's send
// buffer now (sendRoom): what it reports false for goes through s's
// channel, whose writer waits for a slow page as long as writeWait. A
// socket that still cannot take the frame within directWait is closed;
// the page reconnects and catches up.
func (c *wsConn) tryWrite(f Frame, s *Subscription) bool {
	if f.prep == nil || len(f.Data) > directMax || !c.wmu.TryLock() {
		return false
	}
	defer c.wmu.Unlock()
	if !c.live || s.queued.Load() > 0 || (f.Seq != 0 && f.first() != c.last+1) ||
		!sendRoom(c.conn.UnderlyingConn(), len(f.Data)) { // a page that fell behind: its writer waits for it
		return false
	}
	c.conn.SetWriteDeadline(time.Now().Add(directWait))
	if err := c.conn.WritePreparedMessage(f.prep); err != nil {
		c.live = false
		c.s.log.Debug("websocket too slow for its session's audience", "session_id", c.sess.ID, "err", err)
		c.conn.Close() // its reader ends the connection
		return true
	}
	c.s.metrics.FrameSent(c.sess.ID, f.Seq, f.Kind, f.Born)
	c.last = max(c.last, f.Seq)
	return true
}

// writePrepared writes a message prepared for every socket.
func (c *wsConn) writePrepared(pm *websocket.PreparedMessage) error {
	c.conn.SetWriteDeadline(time.Now().Add(writeWait))
	return c.conn.WritePreparedMessage(pm)
}
