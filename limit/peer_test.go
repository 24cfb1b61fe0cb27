package limit

import (
	"net"
	"testing"
	"time"
)

// TestPerPeer: a uid holds at most max connections at once; the next is
// closed as soon as it is accepted, and one is taken again once another
// closes. An unlimited uid is never capped.
func TestPerPeer(t *testing.T) {
	for _, tc := range []struct {
		uid      int
		wantOpen int
	}{{1000, 2}, {0, 4}} {
		inner, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ln := PerPeer(inner, 2, func(net.Conn) (int, bool) { return tc.uid, true }, 0)
		accepted := make(chan net.Conn, 8)
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				accepted <- c
			}
		}()
		for range 4 {
			c, err := net.Dial("tcp", inner.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
		}
		open := 0
		for done := time.After(time.Second); ; {
			select {
			case c := <-accepted:
				open++
				defer c.Close()
				continue
			case <-done:
			}
			break
		}
		if open != tc.wantOpen {
			t.Errorf("uid %d: %d of 4 connections held, want %d", tc.uid, open, tc.wantOpen)
		}
		ln.Close()
	}
}
