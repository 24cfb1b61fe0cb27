// Package netguard decides which URLs Parley may send to on behalf of its
// users (push endpoints, webhooks, Slack) and gives the HTTP client that
// holds to that decision at every connect.
//
// A URL that a user hands Parley is a request Parley will make from inside
// its own network, so by default it must be https on a public address.
// The operator may allow hosts of their own (a self-hosted push service,
// tests) in PARLEY_PUSH_HOSTS.
package netguard

import (
	"net"
	"net/netip"
	"net/url"
	"strings"
)

// ParseHosts reads PARLEY_PUSH_HOSTS: a comma-separated list of hosts
// ("push.internal", "127.0.0.1", "[::1]") or host:port pairs
// ("127.0.0.1:8443"). A bare host allows every port of it.
func ParseHosts(s string) []string {
	var hosts []string
	for _, h := range strings.Split(s, ",") {
		if h = normalHost(h); h != "" {
			hosts = append(hosts, h)
		}
	}
	return hosts
}

// CheckURL parses raw and says, in a sentence for people, why Parley may
// not send to it: it must be an absolute https URL whose host is not a
// loopback, private or otherwise non-public address, unless its host (or
// host:port) is in allowed, in which case http is accepted too.
//
// A host name is not resolved here: what it resolves to is checked by
// Client at every connect, where the answer cannot change under the check.
func CheckURL(raw string, allowed []string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Hostname() == "" {
		return nil, refused("The URL must be an absolute https URL: %q was given.", raw)
	}
	if u.User != nil {
		return nil, refused("The URL must not carry a user name or password.")
	}
	if allowedHost(u.Hostname(), port(u), allowed) && (u.Scheme == "https" || u.Scheme == "http") {
		return u, nil
	}
	if u.Scheme != "https" {
		return nil, refused("The URL must use https: %s was given.", shown(u))
	}
	if err := checkHost(u.Hostname()); err != nil {
		return nil, err
	}
	return u, nil
}

// checkHost refuses an address literal that is not public, and the names
// that always mean this machine.
func checkHost(host string) error {
	h := normalHost(host)
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return &notPublicError{host: host, what: "loopback"}
	}
	if a, err := netip.ParseAddr(h); err == nil {
		if what := nonPublic(a); what != "" {
			return &notPublicError{host: host, what: what}
		}
	}
	return nil
}

// allowedHost reports whether the operator allowed host, on every port or
// on this one.
func allowedHost(host, port string, allowed []string) bool {
	h := normalHost(host)
	hp := net.JoinHostPort(h, port)
	for _, a := range allowed {
		if a == h || a == hp {
			return true
		}
	}
	return false
}

// port is u's port, or its scheme's default.
func port(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if u.Scheme == "http" {
		return "80"
	}
	return "443"
}

// normalHost lower-cases a host, drops a trailing dot and the brackets of
// a bare IPv6 literal, so that the same host is spelled one way.
func normalHost(h string) string {
	h = strings.ToLower(strings.TrimSpace(h))
	if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		h = h[1 : len(h)-1]
	}
	return strings.TrimSuffix(h, ".")
}

// shown is u as an error message may show it: without its query, which
// may hold a secret.
func shown(u *url.URL) string {
	c := *u
	c.RawQuery, c.Fragment = "", ""
	return c.String()
}
