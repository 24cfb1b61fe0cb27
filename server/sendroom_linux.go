//go:build linux

package server

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// directRoom is how many bytes a socket may hold unacknowledged and still
// be written to directly: a page further behind than that, or on a link
// with more than that in flight, gets its frames from its own writer.
const directRoom = 64 << 10

// sendRoom says whether n more bytes may be written to the socket without
// waiting for the network: what the kernel still holds for it (SIOCOUTQ),
// and n, are at most directRoom, far below any TCP send buffer.
func sendRoom(c net.Conn, n int) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	room := false
	_ = rc.Control(func(fd uintptr) {
		held, err := unix.IoctlGetInt(int(fd), unix.SIOCOUTQ)
		room = err == nil && held+n <= directRoom
	})
	return room
}
