package sandbox

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"parley/runner"
)

// The test binary stands in for `parley sandbox-relay` inside bubblewrap.
func init() {
	if len(os.Args) > 1 && os.Args[1] == RelayCommand {
		code, err := RelayMain(os.Args[2:])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
		os.Exit(code)
	}
}

// testBubblewrap makes a Bubblewrap over data as serve does: as root, bwrap
// starts as the project's uid (project 1 of the default range).
func testBubblewrap(t *testing.T, data string, c BubblewrapConfig) *Bubblewrap {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		if os.Getenv("PARLEY_REQUIRE_ALL") == "1" {
			t.Fatal("bwrap not installed (scripts/install-test-deps.sh installs it)")
		}
		t.Skip("bwrap not installed")
	}
	c.Hide = append(c.Hide, data)
	if Available() {
		// t.TempDir's parent is private to root; the uid must enter it.
		if err := os.Chmod(filepath.Dir(data), 0o711); err != nil {
			t.Fatal(err)
		}
		ids, err := New(data, DefaultRange, nil)
		if err != nil {
			t.Fatal(err)
		}
		if c.Relay != "" {
			if c.Relay, err = ids.Install(c.Relay, "parley"); err != nil {
				t.Fatal(err)
			}
		}
		c.IDs = ids
	}
	bw, err := NewBubblewrap(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	return bw
}

// inBwrap runs script with sh in project 1's workspace under data.
func inBwrap(t *testing.T, bw *Bubblewrap, s runner.Spec, script string) string {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Dir = s.Workspace
	if err := bw.Confine(cmd, s); err != nil {
		t.Fatal(err)
	}
	out, _ := cmd.CombinedOutput()
	return string(out)
}

func projectSpec(t *testing.T, data string) runner.Spec {
	t.Helper()
	p := filepath.Join(data, "projects", "1")
	s := runner.Spec{ProjectID: 1, Workspace: filepath.Join(p, "workspace"), ConfigDir: filepath.Join(p, "config"), Home: filepath.Join(p, "home")}
	for _, d := range []string{s.Workspace, s.ConfigDir, s.Home} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func TestBubblewrap(t *testing.T) {
	data := t.TempDir()
	other := filepath.Join(data, "projects", "2", "workspace")
	os.MkdirAll(other, 0o755)
	os.WriteFile(filepath.Join(other, "secret"), []byte("B-SECRET"), 0o644)
	bw := testBubblewrap(t, data, BubblewrapConfig{})
	s := projectSpec(t, data)
	got := inBwrap(t, bw, s, "echo mine > mine; cat "+filepath.Join(other, "secret")+"; pwd; ls /proc | grep -c '^[0-9]'")
	if strings.Contains(got, "B-SECRET") || !strings.Contains(got, "No such file") {
		t.Errorf("another project's file was readable:\n%s", got)
	}
	if !strings.Contains(got, s.Workspace+"\n") {
		t.Errorf("the run does not start in its workspace:\n%s", got)
	}
	if b, err := os.ReadFile(filepath.Join(s.Workspace, "mine")); err != nil || string(b) != "mine\n" {
		t.Errorf("the workspace is not writable: %q, %v\n%s", b, err, got)
	}
}

// TestBubblewrapNeverRoot: bwrap started by root would give the run uid 0
// with every capability; NewBubblewrap refuses that, and with the
// projects' uids the run has its uid and no capability.
func TestBubblewrapNeverRoot(t *testing.T) {
	if !Available() {
		t.Skip("needs root")
	}
	data := t.TempDir()
	if _, err := NewBubblewrap(t.Context(), BubblewrapConfig{Hide: []string{data}}); err == nil || !strings.Contains(err.Error(), "uid 0") {
		t.Errorf("NewBubblewrap as root without uids: err = %v, want a refusal", err)
	}
	bw := testBubblewrap(t, data, BubblewrapConfig{})
	got := inBwrap(t, bw, projectSpec(t, data), "echo UID=$(id -u); grep CapEff /proc/self/status; cat /etc/shadow; mount -o remount,rw / && echo REMOUNTED; unshare -U true && echo NESTED")
	for _, bad := range []string{"UID=0\n", "root:", "REMOUNTED", "NESTED"} {
		if strings.Contains(got, bad) {
			t.Errorf("the run is root-like: %q in\n%s", bad, got)
		}
	}
	if !strings.Contains(got, "UID=200001\n") || !strings.Contains(got, "CapEff:\t0000000000000000") {
		t.Errorf("want uid 200001 and no capability:\n%s", got)
	}
}

// TestBubblewrapAllowlist: a run sees the system's programs and nothing of
// the host's /run, /home, /root, /var, /tmp or /etc beyond the allowlist:
// an operator's file or unix socket there is not reachable.
func TestBubblewrapAllowlist(t *testing.T) {
	data := t.TempDir()
	op, err := os.MkdirTemp("/run", "parley-allow-")
	if err != nil { // not root: the home, which runs do not see either
		home, _ := os.UserHomeDir()
		if op, err = os.MkdirTemp(home, "parley-allow-"); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { os.RemoveAll(op) })
	os.Chmod(op, 0o755)
	os.WriteFile(filepath.Join(op, "env"), []byte("OPERATOR-SECRET"), 0o644)
	ln, err := net.Listen("unix", filepath.Join(op, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "OPERATOR-SOCKET") }))
	os.Chmod(filepath.Join(op, "sock"), 0o777)
	hostTmp := filepath.Join(os.TempDir(), "parley-allow-"+filepath.Base(op))
	os.WriteFile(hostTmp, []byte("OPERATOR-SECRET"), 0o644)
	t.Cleanup(func() { os.Remove(hostTmp) })
	bw := testBubblewrap(t, data, BubblewrapConfig{})
	got := inBwrap(t, bw, projectSpec(t, data), fmt.Sprintf("cat %s/env %s; ls / /run /home /root /var /etc/shadow /etc/profile.d; "+
		"curl -sS --max-time 5 --unix-socket %s/sock http://x/; ls /usr/bin/git && echo SYSTEM", op, hostTmp, op))
	for _, bad := range []string{"OPERATOR-SECRET", "OPERATOR-SOCKET", "postgresql", "shadow\n"} {
		if strings.Contains(got, bad) {
			t.Errorf("the run sees %q:\n%s", bad, got)
		}
	}
	for _, want := range []string{"cannot access '/run'", "cannot access '/home'", "cannot access '/root'", "SYSTEM"} {
		if !strings.Contains(got, want) {
			t.Errorf("the output lacks %q:\n%s", want, got)
		}
	}
}

// TestBubblewrapRelay: the run's network is its own; the address it is
// told the gateway is (Spec.ModelURL) reaches Parley's unix socket through
// sandbox-relay, and nothing else on the host's loopback answers.
func TestBubblewrapRelay(t *testing.T) {
	data := t.TempDir()
	sockDir, err := os.MkdirTemp("", "prl-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	os.Chmod(sockDir, 0o711)
	sock := filepath.Join(sockDir, "gw.sock")
	gw, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(sock, 0o666)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "GATEWAY-ANSWERS "+r.URL.Path) })}
	go srv.Serve(gw)
	t.Cleanup(func() { srv.Close() })
	host, err := net.Listen("tcp", "127.0.0.1:0") // the host's loopback: web port, upstream
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	go http.Serve(host, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "HOST-ANSWERS") }))
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bw := testBubblewrap(t, data, BubblewrapConfig{Relay: self, Gateway: sock})
	s := projectSpec(t, data)
	s.ModelURL = "http://127.0.0.1:41999"
	hostPort := host.Addr().(*net.TCPAddr).Port
	got := inBwrap(t, bw, s, fmt.Sprintf(`for p in 41999 %d; do bash -c "exec 3<>/dev/tcp/127.0.0.1/$p && printf 'GET /v1/messages HTTP/1.0\r\n\r\n' >&3 && cat <&3" 2>&1 | tail -1; echo; done`, hostPort))
	if !strings.Contains(got, "GATEWAY-ANSWERS /v1/messages") {
		t.Errorf("the gateway is not reached through the relay:\n%s", got)
	}
	if strings.Contains(got, "HOST-ANSWERS") || !strings.Contains(got, "Connection refused") {
		t.Errorf("the host's loopback answers the run:\n%s", got)
	}
}

// TestBubblewrapCheck: the start-up check runs the CLI in the sandbox,
// behind the relay and as a run's uid: the real CLI passes, and one that
// needs what the allowlist leaves out (here /run/postgresql) fails it.
func TestBubblewrapCheck(t *testing.T) {
	claude := os.Getenv("PARLEY_CLAUDE_BIN")
	if claude == "" {
		t.Skip("PARLEY_CLAUDE_BIN not set")
	}
	data := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bw := testBubblewrap(t, data, BubblewrapConfig{Relay: self})
	bin := filepath.Join(data, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if bw.ids != nil {
		if claude, err = bw.ids.Install(claude, "claude"); err != nil {
			t.Fatal(err)
		}
	}
	if err := bw.Check(t.Context(), claude); err != nil {
		t.Errorf("the real CLI fails the check: %v", err)
	}
	bad := filepath.Join(bin, "needs-run")
	if err := os.WriteFile(bad, []byte("#!/bin/sh\n[ -d /run/postgresql ] || exit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := bw.Check(t.Context(), bad); err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("a CLI needing /run/postgresql: err = %v, want exit status 3", err)
	}
}
