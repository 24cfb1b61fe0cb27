package metrics

import (
	"crypto/subtle"
	"net"
	"net/http"
	"os"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Loopback says which clients on this machine may scrape without the
// metrics token (PARLEY_METRICS_LOOPBACK).
type Loopback int

const (
	// LoopbackOwn, the default, serves a loopback client only when its
	// end of the connection belongs to root or to Parley's own uid. A
	// run's Bash connects from loopback too, under its project's uid:
	// it, and any other user of the machine, needs the token.
	LoopbackOwn Loopback = iota
	// LoopbackOpen serves every loopback client, whatever its uid: a
	// run whose uid is not Parley's reads the metrics too.
	LoopbackOpen
	// LoopbackToken serves no client without the token (behind a
	// same-host proxy that says nothing of its clients).
	LoopbackToken
)

// refusal is the sentence a client without the token gets.
const refusal = "metrics are served to Parley's own user and root on this machine, or with the metrics token (PARLEY_METRICS_TOKEN)"

// Handler serves the metrics to a client that sends "Authorization:
// Bearer <token>" (when token is set), and without it to a client on this
// machine that loopback admits.
func (m *Metrics) Handler(token string, loopback Loopback) http.Handler {
	h := promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
	own := ownUIDs()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hasToken(r, token) && !admitted(r, loopback, own) {
			http.Error(w, refusal, http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func hasToken(r *http.Request, token string) bool {
	return token != "" && subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte("Bearer "+token)) == 1
}

// admitted says whether loopback lets r in without the token.
func admitted(r *http.Request, loopback Loopback, own []int) bool {
	switch {
	case loopback == LoopbackToken || !direct(r):
		return false
	case loopback == LoopbackOpen:
		return true
	}
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return false
	}
	uid, ok := peerUID(local.String(), r.RemoteAddr)
	if !ok {
		return false // fail closed: an unknown peer is anyone's
	}
	for _, u := range own {
		if uid == u {
			return true
		}
	}
	return false
}

// ownUIDs are the uids whose processes are Parley or may do anything to it.
func ownUIDs() []int { return []int{0, os.Geteuid()} }

// direct says the request comes from this machine and not through a proxy
// on it: a reverse proxy on the same host connects from loopback for every
// client, and says so in a forwarding header, which the token must then
// stand in for.
func direct(r *http.Request) bool {
	for _, h := range []string{"Forwarded", "X-Forwarded-For", "X-Real-Ip"} {
		if r.Header.Get(h) != "" {
			return false
		}
	}
	return isLoopback(r.RemoteAddr)
}

func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
