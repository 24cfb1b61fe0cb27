// Package clientip finds the address a request came from when Parley runs
// behind reverse proxies: the forwarding headers (Forwarded, RFC 7239, and
// X-Forwarded-For) are believed only as far as a chain of trusted proxies
// vouches for them (PARLEY_TRUSTED_PROXIES).
package clientip

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Resolver says which connections are trusted proxies. Its zero value
// trusts none: every request's client is the connection's peer, whatever
// headers it sends.
type Resolver struct {
	trusted []netip.Prefix
}

// Parse reads a comma-separated list of address ranges (10.0.0.0/8,
// fd00::/8); a bare address is a range of one. An empty list trusts none.
func Parse(list string) (Resolver, error) {
	var r Resolver
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		p, err := parsePrefix(f)
		if err != nil {
			return Resolver{}, err
		}
		r.trusted = append(r.trusted, p)
	}
	return r, nil
}

func parsePrefix(s string) (netip.Prefix, error) {
	if !strings.Contains(s, "/") {
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			return netip.Prefix{}, fmt.Errorf("%q is not an address range (write one as 10.0.0.0/8 or fd00::/8)", s)
		}
		a = a.Unmap()
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q is not an address range (write one as 10.0.0.0/8 or fd00::/8)", s)
	}
	if p.Addr().Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
	}
	return p.Masked(), nil
}

// Trusts reports whether a is in one of the trusted ranges.
func (r Resolver) Trusts(a netip.Addr) bool {
	for _, p := range r.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Len is how many ranges are trusted.
func (r Resolver) Len() int { return len(r.trusted) }

// Client is the address req came from, as text ("203.0.113.5",
// "2001:db8::1"). When the connection's peer is not a trusted proxy, that
// is the peer and the forwarding headers are ignored (anyone can send
// them). From a trusted proxy, the hops its header lists are walked from
// the right, the nearest first, skipping trusted proxies: the first
// address that is not one is the client. A hop that is not an address
// (RFC 7239's "unknown" or an obfuscated name, or garbage) stops the walk
// at the trusted proxy that wrote it. When a request carries both
// headers and they name different clients, the trusted proxy appended to
// one of them and the client wrote the other, and which is which cannot be
// told: the peer stands for the client.
func (r Resolver) Client(req *http.Request) string {
	peer, ok := parseNode(req.RemoteAddr)
	if !ok {
		return req.RemoteAddr
	}
	if !r.Trusts(peer) {
		return peer.String()
	}
	fwd, hasFwd := forwardedFor(req.Header)
	xff, hasXFF := xForwardedFor(req.Header)
	switch {
	case hasFwd && hasXFF:
		a, b := r.walk(peer, fwd), r.walk(peer, xff)
		if a != b {
			return peer.String()
		}
		return a.String()
	case hasFwd:
		return r.walk(peer, fwd).String()
	case hasXFF:
		return r.walk(peer, xff).String()
	}
	return peer.String()
}

// walk finds the client in hops (leftmost first, as the headers list
// them), given that peer, a trusted proxy, sent the request.
func (r Resolver) walk(peer netip.Addr, hops []string) netip.Addr {
	client := peer
	for i := len(hops) - 1; i >= 0; i-- {
		a, ok := parseNode(hops[i])
		if !ok {
			return client
		}
		client = a
		if !r.Trusts(a) {
			return a
		}
	}
	return client // every hop a trusted proxy: the leftmost one
}

// parseNode reads one hop: an address, with or without a port, IPv6 in
// brackets or not, zone dropped, IPv4-mapped IPv6 read as IPv4.
func parseNode(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	if a, err := netip.ParseAddr(s); err == nil {
		return a.WithZone("").Unmap(), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().WithZone("").Unmap(), true
	}
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		if a, err := netip.ParseAddr(s[1 : len(s)-1]); err == nil && a.Is6() {
			return a.WithZone("").Unmap(), true
		}
	}
	// RemoteAddr of a Unix socket or a test may carry a host name.
	if host, _, err := net.SplitHostPort(s); err == nil {
		if a, err := netip.ParseAddr(host); err == nil {
			return a.WithZone("").Unmap(), true
		}
	}
	return netip.Addr{}, false
}

// Group is what a throttle counts for address a: an IPv4 address itself,
// an IPv6 address's /64, the block one subscriber is usually given (so
// that trying each address of it does not buy more attempts). Text that
// is no address is its own group.
func Group(a string) string {
	ip, err := netip.ParseAddr(a)
	if err != nil || !ip.Is6() || ip.Is4In6() {
		return a
	}
	p, _ := ip.WithZone("").Prefix(64)
	return p.String()
}

type clientKey struct{}

// With returns req carrying addr as its client's address, for Of.
func With(req *http.Request, addr string) *http.Request {
	return req.WithContext(context.WithValue(req.Context(), clientKey{}, addr))
}

// Of is the client's address With gave req; without one, the
// connection's peer (its host, without the port).
func Of(req *http.Request) string {
	if a, ok := req.Context().Value(clientKey{}).(string); ok {
		return a
	}
	return Resolver{}.Client(req)
}
