package server

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// wireCapture notes each TCP segment the server sends from its port on the
// loopback device: when it left the server (the kernel's time stamp on the
// copy a packet socket is given as the segment is transmitted), to which
// viewer port, and its bytes. BenchmarkFanout's remote viewers are timed
// by it: a browser on a machine of its own gets a frame when the server's
// write puts it on the wire, and reads it on its own CPU, not the server's.
// It needs CAP_NET_RAW (the benchmark runs as root here).
type wireCapture struct {
	fd   int
	port uint16 // the server's
	stop chan struct{}
	done chan struct{}
	segs []wireSeg // the reader's until done is closed
	err  error
	// unstamped counts segments the kernel gave no time stamp.
	unstamped int
	// tcp0 and tcp are the kernel's TCP counters at the start and the end.
	tcp0, tcp map[string]int64
}

// tcpLost are the kernel's counters of segments a receiver dropped (and
// the sender must send again), and of packets the backlog dropped.
var tcpLost = []string{"RcvPruned", "OfoPruned", "TCPBacklogDrop", "TCPOFODrop", "TCPZeroWindowDrop", "TCPRcvQDrop", "softnet_dropped"}

// tcpCounters reads the kernel's TCP counters (TcpExt in /proc/net/netstat)
// and the packets the input backlog dropped (/proc/net/softnet_stat).
func tcpCounters() (map[string]int64, error) {
	b, err := os.ReadFile("/proc/net/netstat")
	if err != nil {
		return nil, err
	}
	m := map[string]int64{}
	var names []string
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "TcpExt:" {
			continue
		}
		if names == nil {
			names = f
			continue
		}
		for i := 1; i < len(f) && i < len(names); i++ {
			m[names[i]], _ = strconv.ParseInt(f[i], 10, 64)
		}
	}
	if b, err = os.ReadFile("/proc/net/softnet_stat"); err != nil {
		return nil, err
	}
	for line := range strings.Lines(string(b)) {
		if f := strings.Fields(line); len(f) > 1 {
			n, _ := strconv.ParseInt(f[1], 16, 64)
			m["softnet_dropped"] += n
		}
	}
	return m, nil
}

// checkResent makes sure the segments the server sent again (resent of
// them, seen in the capture) had reached their viewer the first time, so
// that timing them by their first sending errs not early: no receiver
// dropped a segment meanwhile, and receivers said as many times that they
// had the data already (D-SACK). On loopback nothing is lost on the way;
// a viewer that reads nothing acknowledges late (delayed ACK), so the
// server's tail loss probe sends its last segment again.
func (w *wireCapture) checkResent(resent int) error {
	for _, name := range tcpLost {
		if d := w.tcp[name] - w.tcp0[name]; d != 0 {
			return fmt.Errorf("the kernel counted %d %s while the stream went out: a segment may have reached its viewer only when sent again", d, name)
		}
	}
	if d := w.tcp["TCPDSACKOldSent"] - w.tcp0["TCPDSACKOldSent"]; int64(resent) > d {
		return fmt.Errorf("the server sent %d segments again, and receivers said they had %d of them already", resent, d)
	}
	return nil
}

// bigReceiveBuffer gives the socket a receive buffer of at least size, past
// the system's limit (SO_RCVBUFFORCE, as root), or fails.
func bigReceiveBuffer(fd, size int) error {
	if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_RCVBUFFORCE, size); err != nil {
		return fmt.Errorf("a %d MiB receive buffer (the remote viewers need CAP_NET_ADMIN): %w", size>>20, err)
	}
	if got, err := syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_RCVBUF); err != nil || got < size {
		return fmt.Errorf("a %d MiB receive buffer: got %d bytes (%v)", size>>20, got, err)
	}
	return nil
}

// probeWireCapture says why this machine cannot capture, if it cannot.
func probeWireCapture() error {
	fd, err := syscall.Socket(syscall.AF_PACKET, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("a packet socket (the remote viewers need CAP_NET_RAW): %w", err)
	}
	defer syscall.Close(fd)
	return bigReceiveBuffer(fd, 16<<20)
}

// Classic BPF's ancillary load of the packet type, and the type a packet
// socket gives a copy of a frame being sent (linux/filter.h, if_packet.h).
const (
	skfAdOff       = -0x1000
	skfAdPkttype   = 4
	packetOutgoing = 4
	solPacket      = 263
	packetStats    = 6
)

// startWireCapture captures the segments sent from TCP port serverPort.
func startWireCapture(serverPort int) (*wireCapture, error) {
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		return nil, err
	}
	// Protocol 0: the socket gets nothing until it is bound, after its
	// filter is attached, so nothing unfiltered is queued on it.
	fd, err := syscall.Socket(syscall.AF_PACKET, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("a packet socket (the remote viewers need CAP_NET_RAW): %w", err)
	}
	// Only the copies of segments being sent (loopback shows each twice),
	// IPv4, TCP, not a fragment, from the server's port. A cooked socket's
	// filter sees the packet from its IP header.
	prog := []syscall.SockFilter{
		*syscall.LsfStmt(syscall.BPF_LD|syscall.BPF_W|syscall.BPF_ABS, skfAdOff+skfAdPkttype),
		*syscall.LsfJump(syscall.BPF_JMP|syscall.BPF_JEQ|syscall.BPF_K, packetOutgoing, 0, 8),
		*syscall.LsfStmt(syscall.BPF_LD|syscall.BPF_B|syscall.BPF_ABS, 0),
		*syscall.LsfJump(syscall.BPF_JMP|syscall.BPF_JEQ|syscall.BPF_K, 0x45, 0, 6), // IPv4 with no options
		*syscall.LsfStmt(syscall.BPF_LD|syscall.BPF_B|syscall.BPF_ABS, 9),
		*syscall.LsfJump(syscall.BPF_JMP|syscall.BPF_JEQ|syscall.BPF_K, syscall.IPPROTO_TCP, 0, 4),
		*syscall.LsfStmt(syscall.BPF_LD|syscall.BPF_H|syscall.BPF_ABS, 6),
		*syscall.LsfJump(syscall.BPF_JMP|syscall.BPF_JSET|syscall.BPF_K, 0x1fff, 2, 0),
		*syscall.LsfStmt(syscall.BPF_LD|syscall.BPF_H|syscall.BPF_ABS, 20), // the TCP source port
		*syscall.LsfJump(syscall.BPF_JMP|syscall.BPF_JEQ|syscall.BPF_K, serverPort, 1, 0),
		*syscall.LsfStmt(syscall.BPF_RET|syscall.BPF_K, 0),
		*syscall.LsfStmt(syscall.BPF_RET|syscall.BPF_K, 1<<18),
	}
	fail := func(err error) (*wireCapture, error) {
		syscall.Close(fd)
		return nil, err
	}
	if err := syscall.AttachLsf(fd, prog); err != nil {
		return fail(fmt.Errorf("attach the capture's filter: %w", err))
	}
	if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1); err != nil {
		return fail(err)
	}
	// Room for what comes between two drains, and far more.
	if err := bigReceiveBuffer(fd, 256<<20); err != nil {
		return fail(err)
	}
	// Only ETH_P_ALL sockets see the frames being sent.
	if err := syscall.Bind(fd, &syscall.SockaddrLinklayer{Protocol: htons(syscall.ETH_P_ALL), Ifindex: lo.Index}); err != nil {
		return fail(err)
	}
	w := &wireCapture{fd: fd, port: uint16(serverPort), stop: make(chan struct{}), done: make(chan struct{})}
	if w.tcp0, err = tcpCounters(); err != nil {
		return fail(err)
	}
	go w.read()
	return w, nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// read drains the socket every few milliseconds on a thread of its own
// (not once per segment: a wave of a thousand segments would wake it a
// thousand times), until stop; the kernel's time stamps do not depend on
// when it reads.
func (w *wireCapture) read() {
	runtime.LockOSThread()
	defer close(w.done)
	buf := make([]byte, 1<<18)
	oob := make([]byte, syscall.CmsgSpace(16))
	for stopping := false; ; {
		for {
			n, oobn, _, _, err := syscall.Recvmsg(w.fd, buf, oob, syscall.MSG_DONTWAIT)
			if errors.Is(err, syscall.EAGAIN) {
				break
			}
			if err != nil {
				w.err = err
				return
			}
			if s, ok := parseSegment(buf[:n], oob[:oobn], w.port); ok {
				if s.at == 0 {
					w.unstamped++
				}
				w.segs = append(w.segs, s)
			}
		}
		if stopping {
			return
		}
		select {
		case <-w.stop:
			stopping = true // one more drain
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// parseSegment reads an IPv4 packet's TCP segment from port, and its time
// stamp (0: none).
func parseSegment(p, oob []byte, port uint16) (wireSeg, bool) {
	if len(p) < 20 || p[0]>>4 != 4 || p[9] != syscall.IPPROTO_TCP {
		return wireSeg{}, false
	}
	ihl, total := int(p[0]&0x0f)*4, int(binary.BigEndian.Uint16(p[2:]))
	if total > len(p) || total < ihl+20 {
		return wireSeg{}, false
	}
	tcp := p[ihl:total]
	off := int(tcp[12]>>4) * 4
	if off < 20 || off > len(tcp) || off == len(tcp) {
		return wireSeg{}, false // no data (an ACK)
	}
	if binary.BigEndian.Uint16(tcp) != port {
		return wireSeg{}, false
	}
	s := wireSeg{port: binary.BigEndian.Uint16(tcp[2:]), seq: binary.BigEndian.Uint32(tcp[4:]),
		data: append([]byte(nil), tcp[off:]...)}
	if msgs, err := syscall.ParseSocketControlMessage(oob); err == nil {
		for _, m := range msgs {
			if m.Header.Level == syscall.SOL_SOCKET && m.Header.Type == syscall.SCM_TIMESTAMPNS && len(m.Data) >= 16 {
				ts := (*syscall.Timespec)(unsafe.Pointer(&m.Data[0]))
				s.at = ts.Nano()
			}
		}
	}
	return s, true
}

// captureDrops reads (and resets) how many segments the socket dropped.
func captureDrops(fd int) (uint32, error) {
	var st [2]uint32 // struct tpacket_stats: packets, drops
	l := uint32(unsafe.Sizeof(st))
	if _, _, e := syscall.Syscall6(syscall.SYS_GETSOCKOPT, uintptr(fd), solPacket, packetStats,
		uintptr(unsafe.Pointer(&st[0])), uintptr(unsafe.Pointer(&l)), 0); e != 0 {
		return 0, e
	}
	return st[1], nil
}

// finish stops the capture and returns its segments, in the order sent.
// A dropped segment fails it: the viewers' streams would have holes.
func (w *wireCapture) finish() ([]wireSeg, error) {
	close(w.stop)
	<-w.done
	drops, err := captureDrops(w.fd)
	syscall.Close(w.fd)
	if err == nil {
		w.tcp, err = tcpCounters()
	}
	switch {
	case w.err != nil:
		return nil, w.err
	case err != nil:
		return nil, err
	case drops > 0:
		return nil, fmt.Errorf("the capture dropped %d segments", drops)
	case w.unstamped > 0:
		return nil, fmt.Errorf("the kernel gave %d captured segments no time stamp", w.unstamped)
	}
	return w.segs, nil
}

// detach takes a viewer's socket out of the farm's poller once its reader
// has stopped: the returned descriptor is the socket's, and nothing wakes
// for what arrives on it until reattach. The socket's receive buffer is
// made large enough to hold the stream unread.
func detach(c net.Conn) (int, error) {
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	var derr error
	if err := rc.Control(func(s uintptr) { fd, derr = syscall.Dup(int(s)) }); err != nil {
		return -1, err
	}
	if derr != nil {
		return -1, derr
	}
	if err := bigReceiveBuffer(fd, 16<<20); err != nil {
		syscall.Close(fd)
		return -1, err
	}
	c.Close() // out of the poller; the socket lives on in fd
	return fd, nil
}

// reattach makes a net.Conn of a detached socket again.
func reattach(fd int) (net.Conn, error) {
	f := os.NewFile(uintptr(fd), "viewer")
	defer f.Close()
	return net.FileConn(f)
}
