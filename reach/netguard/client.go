package netguard

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// Client returns an HTTP client for URLs that users gave Parley. Every
// request's URL must pass CheckURL; every connection, including each one
// the client opens again later, is refused if the address the host name
// resolved to is not public, unless the host is in allowed (so a DNS
// answer that changes after CheckURL, or a name that points inside, gets
// nowhere). It follows no redirect: a 3xx answer is an error. It uses no
// proxy from the environment, which would hide the address dialed.
func Client(allowed []string, timeout time.Duration) *http.Client {
	return newClient(allowed, timeout, net.DefaultResolver)
}

func newClient(allowed []string, timeout time.Duration, r *net.Resolver) *http.Client {
	plain := &net.Dialer{Timeout: timeout, Resolver: r}
	guarded := &net.Dialer{Timeout: timeout, Resolver: r, Control: refuseNonPublic}
	t := &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, port, err := net.SplitHostPort(addr)
			if err == nil && allowedHost(host, port, allowed) {
				return plain.DialContext(ctx, network, addr)
			}
			return guarded.DialContext(ctx, network, addr)
		},
		ForceAttemptHTTP2:   true,
		TLSHandshakeTimeout: timeout,
		MaxIdleConns:        100,
		MaxIdleConnsPerHost: 32, // a fan-out sends many pushes to one push service
		IdleConnTimeout:     90 * time.Second,
	}
	return &http.Client{
		Timeout:       timeout,
		Transport:     checkedTransport{allowed: allowed, next: t},
		CheckRedirect: refuseRedirect,
	}
}

// refuseNonPublic is the dialer's Control: it runs for every address the
// dialer is about to connect to, after name resolution.
func refuseNonPublic(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("parse dialed address %q: %w", address, err)
	}
	if what := nonPublic(ap.Addr()); what != "" {
		return &notPublicError{host: address, what: what, connect: true}
	}
	return nil
}

func refuseRedirect(req *http.Request, _ []*http.Request) error {
	return refused("The service answered with a redirect to %s, and Parley follows no redirect.", shown(req.URL))
}

// checkedTransport refuses a request whose URL CheckURL refuses.
type checkedTransport struct {
	allowed []string
	next    http.RoundTripper
}

func (c checkedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if _, err := CheckURL(req.URL.String(), c.allowed); err != nil {
		if req.Body != nil {
			req.Body.Close() // RoundTrip must close the body, on errors too
		}
		return nil, err
	}
	return c.next.RoundTrip(req)
}
