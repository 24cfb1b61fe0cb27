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
// with their HTTP handshake).
func wireStreams(segs []wireSeg, ports map[uint16]bool, frame func(port uint16, op byte, payload []byte, at int64)) error {
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
		// A segment sent again would be timed by its first sending, which
		// the viewer may never have had: the run's times could err early.
		switch d := int32(s.seq - f.next); {
		case d > 0:
			return fmt.Errorf("port %d: %d bytes missing from the capture", s.port, d)
		case d < 0:
			return fmt.Errorf("port %d: the server sent %d bytes again (a segment was lost on the way)", s.port, min(-int(d), len(s.data)))
		}
		f.buf = append(f.buf, s.data...)
		f.next += uint32(len(s.data))
		rest, err := splitFrames(f.buf, func(op byte, payload []byte) error {
			frame(s.port, op, payload, s.at)
			return nil
		})
		if err != nil {
			return fmt.Errorf("port %d: %w", s.port, err)
		}
		f.buf = f.buf[:copy(f.buf, rest)]
	}
	return nil
}
