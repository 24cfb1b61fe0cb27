package server

import (
	"net"
	"net/http"
	"net/http/httptest"

	"parley/limit"
	"parley/metrics"
)

// The tests' relay (loopback port and gateway.sock) is served as serve
// serves it (cmd/parley/isolation.go: relayServer, perPeer): the relay
// server's idle and header timeouts, and a cap on each run uid's
// connections. Root, the tests' uid, is not capped.

// startRelay starts the env's loopback relay; its handler is set later.
func startRelay() *httptest.Server {
	s := httptest.NewUnstartedServer(nil)
	s.Config = limit.RelayServer(nil)
	s.Listener = relayListener(s.Listener)
	s.Start()
	return s
}

// relayServer is the http.Server for the env's gateway.sock.
func relayServer(h http.Handler) *http.Server { return limit.RelayServer(h) }

// relayListener caps each run uid's connections to ln.
func relayListener(ln net.Listener) net.Listener {
	return limit.PerPeer(ln, limit.ConnsPerPeer, metrics.PeerUID, 0)
}
