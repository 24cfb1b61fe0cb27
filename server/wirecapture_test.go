package server

import "fmt"

// wireSeg is one captured segment with data.
type wireSeg struct {
	at   int64  // Unix nanoseconds, the kernel's time stamp
	port uint16 // the viewer's port
	seq  uint32 // the TCP sequence number of data[0]
	data []byte
}

// wireStreams puts the segments to each of ports back into its byte stream
// and calls frame with each WebSocket frame's opcode and payload and when
// the segment that completed it was sent. The capture began with each of
// those streams between two frames (other sockets, begun since, start
// with their HTTP handshake). A segment sent again keeps the time of its
// first sending; resent counts them (see wireCapture.checkResent).
func wireStreams(segs []wireSeg, ports map[uint16]bool, frame func(port uint16, op byte, payload []byte, at int64)) (resent int, err error) {
	type flow struct {
		next uint32
		buf  []byte
	}
	flows := map[uint16]*flow{}
	for _, s := range segs {
		if !ports[s.port] {
			continue
		}
		f := flows[s.port]
		if f == nil {
			f = &flow{next: s.seq}
			flows[s.port] = f
		}
		d := int32(s.seq - f.next)
		switch {
		case d > 0:
			return resent, fmt.Errorf("port %d: %d bytes missing from the capture", s.port, d)
		case d < 0:
			resent++
			if int(-d) >= len(s.data) {
				continue // all of it already had
			}
		}
		data := s.data[-min(d, 0):]
		f.buf = append(f.buf, data...)
		f.next += uint32(len(data))
		rest, err := splitFrames(f.buf, func(op byte, payload []byte) error {
			frame(s.port, op, payload, s.at)
			return nil
		})
		if err != nil {
			return resent, fmt.Errorf("port %d: %w", s.port, err)
		}
		f.buf = f.buf[:copy(f.buf, rest)]
	}
	return resent, nil
}
