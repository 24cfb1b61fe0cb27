package metrics

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// peerUID is the uid that owns the client's end of a TCP connection over
// loopback from client to local, read from the kernel's socket tables
// (/proc/net/tcp and tcp6 list every socket of this network namespace with
// its owner's uid; proc(5)). The client's socket is the one whose local
// address is client and whose remote address is local. While the request
// is being served that socket exists (established, or half-closed by the
// client: the kernel keeps its uid until both ends have closed).
func peerUID(local, client string) (int, bool) {
	l, err1 := net.ResolveTCPAddr("tcp", local)
	c, err2 := net.ResolveTCPAddr("tcp", client)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		if uid, ok := findSocket(table, c, l); ok {
			return uid, true
		}
	}
	return 0, false
}

// findSocket looks in one table for the socket from local to remote.
func findSocket(table string, local, remote *net.TCPAddr) (int, bool) {
	f, err := os.Open(table)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		// "sl local_address rem_address st tx:rx tr:when retrnsmt uid ..."
		fields := strings.Fields(sc.Text())
		if len(fields) < 8 || !sameAddr(fields[1], local) || !sameAddr(fields[2], remote) {
			continue
		}
		uid, err := strconv.Atoi(fields[7])
		return uid, err == nil
	}
	return 0, false
}

// sameAddr compares a table's "HEXIP:HEXPORT" with a. The kernel prints
// the address as 32-bit words in the machine's byte order and the port
// as a number; an IPv4 address seen in tcp6 is IPv4-mapped, which
// net.IP.Equal takes as the same address.
func sameAddr(field string, a *net.TCPAddr) bool {
	hexIP, hexPort, ok := strings.Cut(field, ":")
	port, err := strconv.ParseUint(hexPort, 16, 16)
	if !ok || err != nil || int(port) != a.Port {
		return false
	}
	raw, err := hex.DecodeString(hexIP)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return false
	}
	ip := make(net.IP, len(raw))
	for i := 0; i < len(raw); i += 4 {
		binary.NativeEndian.PutUint32(ip[i:], binary.BigEndian.Uint32(raw[i:]))
	}
	return ip.Equal(a.IP)
}

// unixPeerUID is the uid of c's peer as the kernel recorded it when the
// peer connected (SO_PEERCRED).
func unixPeerUID(c *net.UnixConn) (int, bool) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, false
	}
	var cred *unix.Ucred
	var credErr error
	err = raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	})
	if err != nil || credErr != nil {
		return 0, false
	}
	return int(cred.Uid), true
}
