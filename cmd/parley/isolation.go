package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"

	"parley/gateway"
	"parley/limit"
	"parley/metrics"
	"parley/runner"
	"parley/runstore"
	"parley/sandbox"
	"parley/server"
	"parley/store"
)

// runsAsRoot reports whether Parley runs as root (a variable: tests
// play a server that does not).
var runsAsRoot = sandbox.Available

// isolationConfig is what confines runs: the model gateway's upstream and
// limits, and the per-project uids.
type isolationConfig struct {
	Upstream, APIKey, AuthToken string // the real model API, never given to a run
	ProjectRPM, UserRPM         int
	Isolation                   string // auto, uid, bwrap or off
	UIDRange                    string
	// GatewaySocket is the unix socket runs in bubblewrap reach the
	// gateway and the ask relay through (serve sets it).
	GatewaySocket string
}

// runEnvironment builds how runs start: an allowlisted environment, the
// model gateway (whose Notifier is the supervisor, made later: notify) and,
// when Parley runs as root, the per-project uid sandbox with the programs
// installed where those uids can start them.
func runEnvironment(ctx context.Context, c config, st *store.Store, claude, self string, notify gateway.Notifier, log *slog.Logger) (runner.Config, *gateway.Gateway, error) {
	gw, err := gateway.New(gateway.Config{Upstream: c.Upstream, APIKey: c.APIKey, AuthToken: c.AuthToken,
		ProjectRPM: c.ProjectRPM, UserRPM: c.UserRPM, ServerTools: c.ServerTools}, runstore.NewUsageSink(st), notify, log)
	if err != nil {
		return runner.Config{}, nil, err
	}
	rc := runner.Config{ClaudeBin: claude, SelfExe: self, Env: runner.BaseEnv(os.Environ()), Gateway: gw}
	mode := c.Isolation
	if mode == "auto" {
		mode = "uid"
		if !runsAsRoot() {
			mode = "bwrap"
		}
	}
	switch mode {
	case "off":
		log.Warn("PARLEY_ISOLATION=off: runs are not confined; every run has Parley's OS user and can read the data directory, other projects and every file and socket Parley's user can reach")
		return rc, gw, nil
	case "bwrap":
		bw, err := bubblewrap(ctx, c, &rc, claude, self, log)
		if err != nil && c.Isolation == "auto" {
			return runner.Config{}, nil, fmt.Errorf("runs cannot be confined here: Parley is not root (for per-project uids) and %w; install bubblewrap or run Parley as root, or set PARLEY_ISOLATION=off to run every run unconfined as Parley's own user", err)
		}
		if err != nil {
			return runner.Config{}, nil, err
		}
		rc.Sandbox = bw
		log.Info("runs are confined with bubblewrap", "per_project_uids", bw.PerProjectUIDs())
		return rc, gw, nil
	}
	sb, err := uidSandbox(ctx, c, &rc, claude, self, log)
	if err != nil {
		return runner.Config{}, nil, err
	}
	rc.Sandbox = sb
	log.Info("runs are confined to per-project uids", "uid_range", c.UIDRange)
	return rc, gw, nil
}

// uidSandbox gives runs per-project uids (Parley must be root), with
// claude and parley installed where those uids can start them.
func uidSandbox(ctx context.Context, c config, rc *runner.Config, claude, self string, log *slog.Logger) (*sandbox.Sandbox, error) {
	if !runsAsRoot() {
		return nil, fmt.Errorf("PARLEY_ISOLATION=%s needs Parley to run as root", c.Isolation)
	}
	if c.ClaudeConfigDir != "" {
		return nil, errors.New("CLAUDE_CONFIG_DIR shares one config dir across projects, which per-project uids cannot: unset it, or set PARLEY_ISOLATION=off")
	}
	sb, err := sandbox.New(c.DataDir, c.UIDRange, log)
	if err != nil {
		return nil, err
	}
	if rc.ClaudeBin, err = sb.Install(claude, "claude"); err != nil {
		return nil, err
	}
	if rc.SelfExe, err = sb.Install(self, "parley"); err != nil {
		return nil, err
	}
	if err := sb.Check(ctx, rc.ClaudeBin); err != nil {
		return nil, fmt.Errorf("isolation: %w (or set PARLEY_ISOLATION=off)", err)
	}
	return sb, nil
}

// bubblewrap confines runs with bwrap: as root, bwrap starts as each
// project's uid (never as root, which would give the run uid 0 and every
// capability); as another user, as that user. Runs reach the gateway and
// the ask relay through c.GatewaySocket (listenGateway).
func bubblewrap(ctx context.Context, c config, rc *runner.Config, claude, self string, log *slog.Logger) (*sandbox.Bubblewrap, error) {
	bc := sandbox.BubblewrapConfig{Gateway: c.GatewaySocket}
	if runsAsRoot() {
		ids, err := uidSandbox(ctx, c, rc, claude, self, log)
		if err != nil {
			return nil, err
		}
		bc.IDs = ids
	}
	home, _ := os.UserHomeDir()
	bc.Hide, bc.Programs, bc.Relay = []string{c.DataDir, home}, []string{rc.SelfExe}, rc.SelfExe
	bw, err := sandbox.NewBubblewrap(ctx, bc)
	if err != nil {
		return nil, err
	}
	if err := bw.Check(ctx, rc.ClaudeBin); err != nil {
		return nil, fmt.Errorf("isolation: %w (or set PARLEY_ISOLATION=off)", err)
	}
	return bw, nil
}

// listenGateway listens on the unix socket through which runs in
// bubblewrap reach the gateway and the ask relay (nil for other
// sandboxes). Every project's uid connects to it, so it is 0666 in
// directories they may enter but not list; anyone on the host may reach
// the same handler on the loopback relay address already.
func listenGateway(s runner.Sandbox, path string) (net.Listener, error) {
	if _, ok := s.(*sandbox.Bubblewrap); !ok || path == "" {
		return nil, nil
	}
	_ = os.Remove(path) // a crashed server's
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("gateway socket (set a shorter PARLEY_DATA_DIR if the path is too long): %w", err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		ln.Close()
		return nil, fmt.Errorf("gateway socket: %w", err)
	}
	for _, d := range []string{filepath.Dir(path), filepath.Dir(filepath.Dir(path))} { // run/<replica>, run/
		if err := os.Chmod(d, 0o711); err != nil {
			ln.Close()
			return nil, fmt.Errorf("gateway socket: %w", err)
		}
	}
	return ln, nil
}

// toolSandbox is the runs' sandbox, for the tools Parley runs on a
// project's files (git): nil when runs are not confined.
func toolSandbox(s runner.Sandbox) server.ToolSandbox {
	t, _ := s.(server.ToolSandbox)
	return t
}

// isUIDSandbox reports whether runs start as per-project uids (not as root).
func isUIDSandbox(s runner.Sandbox) bool {
	if bw, ok := s.(*sandbox.Bubblewrap); ok {
		return bw.PerProjectUIDs()
	}
	_, ok := s.(*sandbox.Sandbox)
	return ok
}

// relayServer serves h, the relay's routes (model gateway and ask relay),
// to the runs' connections: kept-alive idle ones and ones whose request
// header does not come are closed (limit.RelayServer).
func relayServer(h http.Handler) *http.Server { return limit.RelayServer(h) }

// perPeer caps the connections each run's uid holds at once to ln, the
// relay's loopback port or gateway.sock (limit.PerPeer, the uid told by
// SO_PEERCRED or the kernel's TCP table: metrics.PeerUID). Parley's own
// uid and root are not capped: as non-root every run is Parley's uid,
// and only the timeouts bound them.
func perPeer(ln net.Listener) net.Listener {
	return limit.PerPeer(ln, limit.ConnsPerPeer, metrics.PeerUID, 0, os.Geteuid())
}
