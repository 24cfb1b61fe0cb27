//go:build bench

package server

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/gorilla/websocket"
)

// dialLeanViewer is dialSeqViewer for the viewer farm: after the handshake
// it reads the socket's frames itself, a large read at a time, and only
// looks for seqs, so a thousand viewers cost the machine they share with
// the server as little as a client can (about a syscall per wake-up). It
// answers pings; it writes nothing else after its hello.
func dialLeanViewer(base, sessionID string, h http.Header, after int64) (*seqViewer, error) {
	// The server writes nothing before it has read the hello, so nothing
	// of the socket's stream is left in the dialer's buffer.
	return dialViewer(base, sessionID, h, after, func(v *seqViewer) error {
		return v.readFrames(v.conn.UnderlyingConn())
	}, true)
}

// readFrames reads server frames (never masked) from c until it fails.
func (v *seqViewer) readFrames(c net.Conn) error {
	buf := make([]byte, 0, 64<<10)
	ar := newArrivalReader(c)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)] // grow for a frame larger than the buffer
		}
		var n int
		var err error
		var arrived time.Time
		if ar != nil {
			n, arrived, err = ar.read(buf[len(buf):cap(buf)])
		} else {
			n, err = c.Read(buf[len(buf):cap(buf)])
		}
		if err != nil {
			return err
		}
		now := time.Now()
		if arrived.IsZero() || arrived.After(now) {
			arrived = now
		}
		buf = buf[:len(buf)+n]
		rest, err := v.frames(c, buf, now, arrived)
		if err != nil {
			return err
		}
		buf = buf[:copy(buf, rest)]
	}
}

// frames handles every whole frame at the start of b and returns the rest.
func (v *seqViewer) frames(c net.Conn, b []byte, now, arrived time.Time) ([]byte, error) {
	return splitFrames(b, func(op byte, payload []byte) error {
		switch op {
		case websocket.TextMessage, 0: // a message or its continuation
			v.record(payload, now, arrived)
		case websocket.PingMessage:
			return pong(c, payload)
		case websocket.CloseMessage:
			return io.EOF
		}
		return nil
	})
}

// splitFrames calls each with the opcode and payload of every whole server
// frame (never masked) at the start of b, and returns the rest.
func splitFrames(b []byte, each func(op byte, payload []byte) error) ([]byte, error) {
	for len(b) >= 2 {
		op, size, hdr := b[0]&0x0f, int(b[1]&0x7f), 2
		switch size {
		case 126:
			if len(b) < 4 {
				return b, nil
			}
			size, hdr = int(binary.BigEndian.Uint16(b[2:])), 4
		case 127:
			if len(b) < 10 {
				return b, nil
			}
			size, hdr = int(binary.BigEndian.Uint64(b[2:])), 10
		}
		if b[1]&0x80 != 0 {
			return nil, errors.New("a masked frame from the server")
		}
		if len(b) < hdr+size {
			return b, nil
		}
		if err := each(op, b[hdr:hdr+size]); err != nil {
			return nil, err
		}
		b = b[hdr+size:]
	}
	return b, nil
}

// pong answers a ping with a client's (masked, here with a zero key) pong.
func pong(c net.Conn, data []byte) error {
	f := append([]byte{0x80 | websocket.PongMessage, 0x80 | byte(len(data)), 0, 0, 0, 0}, data...)
	_, err := c.Write(f)
	return err
}
