package netguard

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// countedServer is an httptest server that counts the connections it
// accepted, so a test can tell "refused before connecting" from
// "connected and failed".
func countedServer(t *testing.T, h http.Handler) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns
}

func ok() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
}

func TestClientRefusesLoopback(t *testing.T) {
	srv, conns := countedServer(t, ok())
	resp, err := Client(nil, 5*time.Second).Get(srv.URL)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("GET %s with nothing allowed: %s, want a refusal", srv.URL, resp.Status)
	}
	if n := conns.Load(); n != 0 {
		t.Errorf("the server accepted %d connections, want 0 (err: %v)", n, err)
	}
}

func TestClientConnectsWhenAllowed(t *testing.T) {
	srv, _ := countedServer(t, ok())
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	for _, allowed := range []string{"127.0.0.1", "127.0.0.1:" + port} {
		t.Run(allowed, func(t *testing.T) {
			resp, err := Client(ParseHosts(allowed), 5*time.Second).Get(srv.URL)
			if err != nil {
				t.Fatalf("GET %s with %q allowed: %v", srv.URL, allowed, err)
			}
			defer resp.Body.Close()
			if body, _ := io.ReadAll(resp.Body); string(body) != "ok" {
				t.Errorf("body %q, want ok", body)
			}
		})
	}
	t.Run("another port", func(t *testing.T) {
		resp, err := Client(ParseHosts("127.0.0.1:1"), 5*time.Second).Get(srv.URL)
		if err == nil {
			resp.Body.Close()
			t.Fatalf("GET %s with only 127.0.0.1:1 allowed: %s, want a refusal", srv.URL, resp.Status)
		}
	})
}

func TestClientFollowsNoRedirect(t *testing.T) {
	target, conns := countedServer(t, ok())
	for _, allowTarget := range []bool{false, true} {
		redirector, _ := countedServer(t, http.RedirectHandler(target.URL+"/internal", http.StatusFound))
		allowed := []string{strings.TrimPrefix(redirector.URL, "http://")}
		if allowTarget {
			allowed = append(allowed, strings.TrimPrefix(target.URL, "http://"))
		}
		resp, err := Client(allowed, 5*time.Second).Get(redirector.URL)
		if err == nil {
			resp.Body.Close()
			t.Fatalf("allowed %v: GET %s: %s, want the redirect refused", allowed, redirector.URL, resp.Status)
		}
		if !strings.Contains(err.Error(), "redirect") || !errors.Is(err, ErrRefused) {
			t.Errorf("allowed %v: error %q does not say it was a redirect", allowed, err)
		}
	}
	if n := conns.Load(); n != 0 {
		t.Errorf("the redirect's target accepted %d connections, want 0", n)
	}
}

// TestClientChecksResolvedAddress: a name that passes CheckURL but resolves
// to loopback (DNS rebinding) is refused when the connection is made.
func TestClientChecksResolvedAddress(t *testing.T) {
	srv, conns := countedServer(t, ok())
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	r := fakeResolver(t, net.IPv4(127, 0, 0, 1))
	u := "https://rebind.example.com:" + port + "/push"
	if _, err := CheckURL(u, nil); err != nil {
		t.Fatalf("CheckURL(%s): %v, want it accepted (only the answer is private)", u, err)
	}
	resp, err := newClient(nil, 5*time.Second, r).Get(u)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("GET %s: %s, want a refusal", u, resp.Status)
	}
	if !errors.Is(err, ErrNotPublic) {
		t.Errorf("GET %s: %v, want ErrNotPublic", u, err)
	}
	if n := conns.Load(); n != 0 {
		t.Errorf("the server accepted %d connections, want 0", n)
	}
	// The same name, allowed by the operator, may resolve inside.
	allowedURL := "http://rebind.example.com:" + port + "/push"
	resp, err = newClient(ParseHosts("rebind.example.com"), 5*time.Second, r).Get(allowedURL)
	if err != nil {
		t.Fatalf("GET %s with rebind.example.com allowed: %v", allowedURL, err)
	}
	resp.Body.Close()
}

// fakeResolver answers every A question with ip and every other question
// with no records, from a real DNS server on loopback UDP.
func fakeResolver(t *testing.T, ip net.IP) *net.Resolver {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go serveDNS(pc, ip.To4())
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", pc.LocalAddr().String())
	}}
}

func serveDNS(pc net.PacketConn, ip4 net.IP) {
	buf := make([]byte, 512)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		q := buf[:n]
		// Header (12 bytes), then one question: a name ending in a zero
		// label, then QTYPE and QCLASS (RFC 1035 §4.1).
		end := 12
		for end < n && q[end] != 0 {
			end += int(q[end]) + 1
		}
		end += 5
		if end > n {
			continue
		}
		resp := append([]byte{}, q[:end]...)
		binary.BigEndian.PutUint16(resp[2:], 0x8180) // response, recursion available, no error
		binary.BigEndian.PutUint16(resp[8:], 0)      // NSCOUNT
		binary.BigEndian.PutUint16(resp[10:], 0)     // ARCOUNT
		if binary.BigEndian.Uint16(q[end-4:]) == 1 { // A
			binary.BigEndian.PutUint16(resp[6:], 1) // ANCOUNT
			resp = append(resp, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 0, 0, 4)
			resp = append(resp, ip4...)
		} else {
			binary.BigEndian.PutUint16(resp[6:], 0)
		}
		pc.WriteTo(resp, from)
	}
}
