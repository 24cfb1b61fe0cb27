package limit

import (
	"net"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// The relay listener (the loopback port runs reach the model gateway and
// the ask relay on, and gateway.sock for runs in bubblewrap) is served to
// every run's Bash: each connection it holds costs Parley a file
// descriptor and a goroutine. A run's uid holds at most ConnsPerPeer at
// once, and an idle or silent one is closed.
const (
	// ConnsPerPeer is how many connections one uid other than Parley's
	// may hold open to the relay. A run's CLI holds a few (its model
	// requests, an ask, an MCP stream), and every live run of a project
	// shares the project's uid, with no cap on a project's live runs: 256
	// leaves room for dozens of sessions of one project at once (64 would
	// cut a busy project's runs off the model) while one project's runs
	// hold at most 256 of Parley's descriptors.
	ConnsPerPeer = 256
	// RelayIdleTimeout closes a kept-alive connection with no request.
	RelayIdleTimeout = 10 * time.Second
	// RelayHeaderTimeout closes a connection whose request's header has
	// not arrived whole.
	RelayHeaderTimeout = 10 * time.Second
)

// RelayServer is the http.Server for the relay listener: h behind its
// timeouts. A request may then take as long as it needs (a stream from the
// model, an ask waiting for a person).
func RelayServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: RelayHeaderTimeout, IdleTimeout: RelayIdleTimeout}
}

// PerPeer wraps ln so that no uid but those in unlimited (Parley's own,
// root) holds more than max of its connections at once: a connection
// beyond is closed as soon as it is accepted. uidOf tells a connection's
// peer uid (metrics.PeerUID); a connection whose uid it cannot tell
// counts under one shared key.
func PerPeer(ln net.Listener, max int, uidOf func(net.Conn) (int, bool), unlimited ...int) net.Listener {
	return &peerListener{Listener: ln, conns: NewConns(max), uidOf: uidOf, unlimited: unlimited}
}

type peerListener struct {
	net.Listener
	conns     *Conns
	uidOf     func(net.Conn) (int, bool)
	unlimited []int
}

// Accept returns the next connection whose peer is within its cap.
func (l *peerListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		key := "unknown"
		if uid, ok := l.uidOf(c); ok {
			if slices.Contains(l.unlimited, uid) {
				return c, nil
			}
			key = strconv.Itoa(uid)
		}
		release, ok := l.conns.Acquire(key)
		if !ok {
			c.Close() // over the cap: closed at once, nothing read
			continue
		}
		return &peerConn{Conn: c, release: release}, nil
	}
}

// peerConn gives its peer's share back when closed.
type peerConn struct {
	net.Conn
	release func() // safe to call more than once (Conns.Acquire)
}

func (c *peerConn) Close() error {
	err := c.Conn.Close()
	c.release()
	return err
}
