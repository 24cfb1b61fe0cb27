package metrics

import (
	"net"
	"os"
	"path/filepath"
	"testing"
)

// TestPeerUID: the uid at the other end of a unix socket (SO_PEERCRED)
// and of a loopback TCP connection (the kernel's table) is this test's.
func TestPeerUID(t *testing.T) {
	for _, addr := range []struct{ network, address string }{
		{"unix", filepath.Join(t.TempDir(), "s.sock")}, {"tcp", "127.0.0.1:0"},
	} {
		ln, err := net.Listen(addr.network, addr.address)
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		c, err := net.Dial(addr.network, ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		s, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if uid, ok := PeerUID(s); !ok || uid != os.Getuid() {
			t.Errorf("%s: PeerUID = %d, %v; want %d", addr.network, uid, ok, os.Getuid())
		}
	}
}
