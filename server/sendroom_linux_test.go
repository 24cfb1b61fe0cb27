//go:build linux

package server

import (
	"io"
	"net"
	"testing"
	"time"
)

// sendRoom sees a socket's send buffer fill while its peer does not read,
// and empty again once it does.
func TestSendRoomFollowsTheSendBuffer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	peer := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(peer)
			return
		}
		peer <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p := <-peer
	if p == nil {
		t.Fatal("no peer")
	}
	defer p.Close()
	const n = 16 << 10
	if !sendRoom(c, n) {
		t.Fatal("no room in an empty socket")
	}
	frame := make([]byte, n)
	written := 0
	for sendRoom(c, n) { // the peer reads nothing: the buffers fill
		if _, err := c.Write(frame); err != nil {
			t.Fatal(err)
		}
		if written += n; written > 256<<20 {
			t.Fatal("256 MiB written to a peer that reads nothing, and still room")
		}
	}
	if _, err := io.CopyN(io.Discard, p, int64(written)); err != nil { // the peer reads it all
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); !sendRoom(c, n); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) { // the peer's acknowledgements free the queue
			t.Fatal("no room once the peer has read everything")
		}
	}
}
