//go:build linux

package server

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// sendRoom says whether n more bytes fit in the socket's send buffer now,
// so that writing them does not wait for the network: the bytes the
// kernel still holds for it (SIOCOUTQ) against the buffer's size
// (SO_SNDBUF, which the kernel doubles for its own bookkeeping), with as
// much again to spare.
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
		size, err := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF)
		if err != nil {
			return
		}
		held, err := unix.IoctlGetInt(int(fd), unix.SIOCOUTQ)
		if err != nil {
			return
		}
		room = size/2-held >= 2*n
	})
	return room
}
