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

// writePrepared writes a message prepared for every socket.
func (c *wsConn) writePrepared(pm *websocket.PreparedMessage) error {
	c.conn.SetWriteDeadline(time.Now().Add(writeWait))
	return c.conn.WritePreparedMessage(pm)
}
