package netguard

import (
	"errors"
	"net"
	"strings"
	"testing"
	"time"
)

// TestClientRefusesOtherSpellingsOfLoopback: loopback spelled as a
// decimal or hexadecimal number, a short dotted form, IPv6 or IPv4-mapped
// IPv6, or a name answered with 127.0.0.1, never gets a connection, with
// nothing allowed or with 127.0.0.1 allowed on another port. (Go's own
// resolver does not read the numeric forms as addresses and finds no such
// host; glibc's would answer 127.0.0.1, which the dial check refuses.)
func TestClientRefusesOtherSpellingsOfLoopback(t *testing.T) {
	srv, conns := countedServer(t, ok())
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	hosts := []string{"2130706433", "0x7f000001", "017700000001", "127.1", "0177.0.0.1", "[::1]", "[::ffff:127.0.0.1]",
		"[::ffff:7f00:1]", "[0:0:0:0:0:ffff:7f00:1]", "127.0.0.1.", "LOCALHOST", "localhost."}
	for _, allowed := range [][]string{nil, {"127.0.0.1:1"}} {
		for _, h := range hosts {
			u := "https://" + h + ":" + port + "/push"
			resp, err := Client(allowed, 3*time.Second).Get(u)
			if err == nil {
				resp.Body.Close()
				t.Errorf("allowed %v: GET %s: %s, want a refusal", allowed, u, resp.Status)
				continue
			}
			t.Logf("allowed %v: %s: %v", allowed, h, err)
		}
	}
	// A name the resolver answers with loopback is refused by netguard
	// itself, not by a failed lookup.
	u := "https://parley-push.example.com:" + port + "/push"
	_, err := newClient(nil, 3*time.Second, fakeResolver(t, net.IPv4(127, 0, 0, 1))).Get(u)
	if !errors.Is(err, ErrNotPublic) {
		t.Errorf("GET %s resolving to 127.0.0.1: %v, want ErrNotPublic", u, err)
	}
	if n := conns.Load(); n != 0 {
		t.Errorf("the loopback server accepted %d connections, want 0", n)
	}
}
