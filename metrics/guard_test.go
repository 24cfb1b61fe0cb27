package metrics

import (
	"encoding/binary"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// TestLoopbackOwn: by default a loopback client without the token is
// served only when its socket is root's or Parley's own uid. Another uid
// on the machine (a run's, whose Bash connects from loopback) is refused,
// and so is a request whose peer cannot be found (fail closed).
func TestLoopbackOwn(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the peer's uid is read from /proc/net/tcp")
	}
	m := New(func() int { return 1 }, nil)
	srv := httptest.NewServer(m.Handler("secret", LoopbackOwn))
	defer srv.Close()
	for _, tc := range []struct{ name, url string }{{"IPv4", srv.URL}, {"IPv6", ipv6URL(t, m)}} {
		if tc.url == "" {
			continue
		}
		res, err := http.Get(tc.url + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || !strings.Contains(string(body), "parley_runs_live 1") {
			t.Errorf("%s, this process's own uid: %d %.200s", tc.name, res.StatusCode, body)
		}
	}
	// No connection behind the request: nobody's.
	r := httptest.NewRequest("GET", "/metrics", nil)
	r.RemoteAddr = "127.0.0.1:5000"
	w := httptest.NewRecorder()
	m.Handler("secret", LoopbackOwn).ServeHTTP(w, r)
	if w.Code != http.StatusForbidden {
		t.Errorf("a peer that cannot be found: %d, want 403", w.Code)
	}
	if os.Geteuid() != 0 {
		t.Log("not root: another uid's client is not tried")
		return
	}
	for _, tc := range []struct {
		auth string
		want string
	}{{"", "403"}, {"Bearer secret", "200"}} {
		cmd := exec.CommandContext(t.Context(), "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-H", "Authorization: "+tc.auth, srv.URL+"/metrics")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.Output()
		if err != nil {
			t.Skipf("curl as nobody: %v", err)
		}
		if got := string(out); got != tc.want {
			t.Errorf("uid 65534 with %q: %s, want %s", tc.auth, got, tc.want)
		}
	}
}

// ipv6URL serves m on [::1], or returns "" where there is no IPv6 loopback.
func ipv6URL(t *testing.T, m *Metrics) string {
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		return ""
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: m.Handler("", LoopbackOwn)}}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestSameAddr reads the kernel's socket table notation.
func TestSameAddr(t *testing.T) {
	word := func(ip [4]byte) string { // how the kernel prints a 32-bit word of an address
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], binary.NativeEndian.Uint32(ip[:]))
		return strings.ToUpper(hex.EncodeToString(b[:]))
	}
	v4 := word([4]byte{127, 0, 0, 1})
	mapped := word([4]byte{}) + word([4]byte{}) + word([4]byte{0, 0, 0xff, 0xff}) + v4
	for _, tc := range []struct {
		field, addr string
		want        bool
	}{
		{v4 + ":1F90", "127.0.0.1:8080", true},
		{v4 + ":1F91", "127.0.0.1:8080", false},
		{mapped + ":1F90", "127.0.0.1:8080", true},
		{word([4]byte{127, 0, 0, 2}) + ":1F90", "127.0.0.1:8080", false},
		{"nonsense", "127.0.0.1:8080", false},
	} {
		a, _ := net.ResolveTCPAddr("tcp", tc.addr)
		if got := sameAddr(tc.field, a); got != tc.want {
			t.Errorf("sameAddr(%q, %s) = %v, want %v", tc.field, tc.addr, got, tc.want)
		}
	}
}
