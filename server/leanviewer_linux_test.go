//go:build bench

package server

import (
	"net"
	"syscall"
	"time"
	"unsafe"
)

// arrivalReader reads a TCP socket with the kernel's receive time stamp
// of what each read returns (SO_TIMESTAMPNS): when the bytes reached the
// viewer's socket, which is when a browser on a machine of its own would
// have them. The viewer farm's own delay in reading a thousand sockets on
// the server's cores is then told apart from the server's.
type arrivalReader struct {
	rc  syscall.RawConn
	oob []byte
}

// newArrivalReader returns nil when c cannot give receive times.
func newArrivalReader(c net.Conn) *arrivalReader {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return nil
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nil
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
	}); err != nil || serr != nil {
		return nil
	}
	return &arrivalReader{rc: rc, oob: make([]byte, syscall.CmsgSpace(16))}
}

// read reads into b like Read, and returns when the last of the bytes
// read reached the socket (zero if the kernel did not say).
func (a *arrivalReader) read(b []byte) (int, time.Time, error) {
	var n, oobn int
	var rerr error
	err := a.rc.Read(func(fd uintptr) bool {
		n, oobn, _, _, rerr = syscall.Recvmsg(int(fd), b, a.oob, 0)
		return rerr != syscall.EAGAIN
	})
	if err == nil {
		err = rerr
	}
	if err == nil && n == 0 && len(b) > 0 {
		err = net.ErrClosed
	}
	if err != nil {
		return 0, time.Time{}, err
	}
	var at time.Time
	if msgs, perr := syscall.ParseSocketControlMessage(a.oob[:oobn]); perr == nil {
		for _, m := range msgs {
			if m.Header.Level == syscall.SOL_SOCKET && m.Header.Type == syscall.SCM_TIMESTAMPNS && len(m.Data) >= 16 {
				ts := (*syscall.Timespec)(unsafe.Pointer(&m.Data[0]))
				at = time.Unix(ts.Sec, ts.Nsec)
			}
		}
	}
	return n, at, nil
}
