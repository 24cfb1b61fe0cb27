package hub

import "github.com/gorilla/websocket"

// prepare makes, once for every socket, the message a socket sends when f
// is all it has to send: rendered (a delta's fast-path fragment), framed
// and, were compression on, compressed once (websocket.PreparedMessage).
// A socket that fell behind merges frames into a message of its own.
func prepare(f Frame) Frame {
	if f.prep != nil || (len(f.Data) == 0 && !f.IsDelta) {
		return f // a poke for the inboxes: no message
	}
	var co Coalescer
	co.Add(f)
	if pm, err := websocket.NewPreparedMessage(websocket.TextMessage, co.Take()); err == nil {
		f.prep = pm
	}
	return f
}

// Prepared is the message a socket sends when f is all it has to send,
// made once for every socket by Publish; nil for a frame it did not make.
func (f Frame) Prepared() *websocket.PreparedMessage { return f.prep }
