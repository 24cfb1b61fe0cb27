package metrics

import "net"

// PeerUID is the uid of the process at the other end of c: for a unix
// socket the kernel's SO_PEERCRED, for a TCP connection over loopback the
// owner of the client's socket in the kernel's tables (the lookup
// PARLEY_METRICS_LOOPBACK=own uses). ok is false when it cannot be told
// (another kind of connection, another system, a client already gone).
func PeerUID(c net.Conn) (uid int, ok bool) {
	switch c := c.(type) {
	case *net.UnixConn:
		return unixPeerUID(c)
	case *net.TCPConn:
		return peerUID(c.LocalAddr().String(), c.RemoteAddr().String())
	}
	return 0, false
}
