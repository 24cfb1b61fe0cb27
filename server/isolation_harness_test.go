package server

import (
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"

	"parley/runner"
	"parley/sandbox"
)

// upstreamKey is the "real" model key the test gateway sends upstream; no
// run may ever see it.
const upstreamKey = "sk-upstream-real-key-never-in-a-run"

// toolsOf is the runs' sandbox for git, as serve wires it.
func toolsOf(s runner.Sandbox) ToolSandbox {
	t, _ := s.(ToolSandbox)
	return t
}

// runtimeDir is where the env's runs' ask_user config files live.
func (e *env) runtimeDir() string {
	d := filepath.Join(e.dataDir, "run")
	if err := os.MkdirAll(d, 0o700); err != nil {
		e.t.Fatal(err)
	}
	return d
}

// The test binary stands in for `parley sandbox-relay`, the first process
// of a run in bubblewrap (before TestMain: it must not start PostgreSQL).
func init() {
	if len(os.Args) > 1 && os.Args[1] == sandbox.RelayCommand {
		code, err := sandbox.RelayMain(os.Args[2:])
		if err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
		}
		os.Exit(code)
	}
}

// confine confines the env's runs as `parley serve` does: mode "uid" gives
// them per-project uids (as root; without root the test is skipped), mode
// "bwrap" runs them in bubblewrap, started as the project's uid when the
// test runs as root (never as root), else as the test's user; its runs
// reach the relay (gateway and ask relay) through a unix socket.
func (e *env) confine(rc *runner.Config, mode string) {
	e.t.Helper()
	if mode == "bwrap" {
		c := sandbox.BubblewrapConfig{Gateway: e.gatewaySocket()}
		if sandbox.Available() {
			c.IDs = e.uidSandbox(rc)
		}
		home, _ := os.UserHomeDir()
		c.Hide, c.Programs, c.Relay = []string{e.dataDir, home}, []string{rc.SelfExe}, rc.SelfExe
		sb, err := sandbox.NewBubblewrap(e.t.Context(), c)
		if err != nil {
			e.t.Fatal(err)
		}
		if err := sb.Check(e.t.Context(), rc.ClaudeBin); err != nil {
			e.t.Fatal(err)
		}
		rc.Sandbox = sb
		return
	}
	if !sandbox.Available() {
		e.t.Skip("per-project uids need root")
	}
	rc.Sandbox = e.uidSandbox(rc)
}

// uidSandbox makes the per-project uid sandbox, with claude and the test
// binary installed where the uids can start them.
func (e *env) uidSandbox(rc *runner.Config) *sandbox.Sandbox {
	e.t.Helper()
	// t.TempDir's parent is private to root (0700); the runs must enter it.
	if err := os.Chmod(filepath.Dir(e.dataDir), 0o711); err != nil {
		e.t.Fatal(err)
	}
	sb, err := sandbox.New(e.dataDir, sandbox.DefaultRange, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	if rc.ClaudeBin, err = sb.Install(rc.ClaudeBin, "claude"); err != nil {
		e.t.Fatal(err)
	}
	if rc.SelfExe, err = sb.Install(rc.SelfExe, "parley"); err != nil {
		e.t.Fatal(err)
	}
	if err := sb.Check(e.t.Context(), rc.ClaudeBin); err != nil {
		e.t.Fatal(err)
	}
	return sb
}

// gatewaySocket serves the env's relay handler (set once the relay exists)
// on a unix socket, as serve's listenGateway does, in a short directory
// every uid may enter (a socket path has at most 107 bytes).
func (e *env) gatewaySocket() string {
	e.t.Helper()
	dir, err := os.MkdirTemp("", "prl-")
	if err != nil {
		e.t.Fatal(err)
	}
	path := filepath.Join(dir, "gateway.sock")
	ln, err := net.Listen("unix", path)
	if err == nil {
		err = errors.Join(os.Chmod(path, 0o666), os.Chmod(dir, 0o711))
	}
	if err != nil {
		e.t.Fatal(err)
	}
	srv := relayServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.relay.Config.Handler.ServeHTTP(w, r)
	}))
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(relayListener(ln)) }()
	e.t.Cleanup(func() { srv.Close(); <-done; os.RemoveAll(dir) })
	return path
}
