package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"

	"parley/runner"
)

// Bubblewrap confines runs in bubblewrap (Debian's bwrap): each claude
// starts in new user, mount, pid, network, ipc, uts and cgroup namespaces,
// with no capabilities, in a session of its own, killed with its parent.
// Its file system is an allowlist (binds.go): the system's programs and
// libraries and a few files of /etc read-only, a fresh /tmp, and the run's
// own directories and files (its workspace, config dir and home
// read-write; its token files and the programs it starts read-only);
// nothing else of /home, /root, /run, /var or the data directory. Its
// network is its own loopback: `parley sandbox-relay` (relay.go) listens
// there where the run is told the model gateway is and passes each
// connection on to a unix socket Parley serves the gateway and the ask
// relay on.
//
// bwrap never runs as root: started by root, bwrap would give the run uid
// 0 with every capability in its namespaces (it read /etc/shadow and
// remounted / read-write). When Parley is root the run starts bwrap as
// its project's own uid (see Sandbox), so the run has that uid, no
// capability, and the uid's own file permissions besides the allowlist.
type Bubblewrap struct {
	bwrap    string
	hide     []string // directories a bound one may hold; replaced by an empty tmpfs
	programs []string // files mounted read-only at their own paths
	relay    string   // the parley binary whose sandbox-relay starts first; "" = none
	gateway  string   // Parley's unix socket for the gateway and the ask relay
	ids      *Sandbox // the projects' uids, when Parley is root
	// disableUserns: this bwrap (0.8 and later) can forbid the run user
	// namespaces of its own, where it would hold capabilities again.
	disableUserns bool
}

// BubblewrapConfig is what a Bubblewrap lets runs see and reach.
type BubblewrapConfig struct {
	// Hide are directories a run must not see even where one of its own
	// holds them (the data directory, Parley's home).
	Hide []string
	// Programs are the files runs start (claude, parley): mounted at their
	// own paths.
	Programs []string
	// Relay is the parley binary whose `sandbox-relay` is the run's first
	// process, and Gateway the unix socket Parley serves its model gateway
	// and ask relay on; with either empty a run reaches no gateway.
	Relay, Gateway string
	// IDs gives each project's runs its uid; it is required when Parley
	// runs as root, so that bwrap starts as that uid, never as root.
	IDs *Sandbox
}

// gatewayInside is where the gateway's socket is mounted in a run.
const gatewayInside = "/run/parley/gateway.sock"

// NewBubblewrap finds bwrap and checks that it can make the sandbox here,
// as the uid runs will have.
func NewBubblewrap(ctx context.Context, c BubblewrapConfig) (*Bubblewrap, error) {
	if os.Geteuid() == 0 && c.IDs == nil {
		return nil, errors.New("bubblewrap started by root gives runs uid 0 with every capability; as root, confine runs with per-project uids (PARLEY_ISOLATION=uid or bwrap, which starts bwrap as the project's uid)")
	}
	bin, err := exec.LookPath("bwrap")
	if err != nil {
		return nil, errors.New("bubblewrap (bwrap) is not installed; install it (Debian: apt-get install bubblewrap) or run Parley as root for per-project uids")
	}
	b := &Bubblewrap{bwrap: bin, ids: c.IDs, gateway: c.Gateway}
	for _, d := range c.Hide {
		if d = filepath.Clean(d); d != "/" && d != "." {
			b.hide = append(b.hide, d)
		}
	}
	for _, p := range append(append([]string{}, c.Programs...), c.Relay) {
		if p == "" {
			continue
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, err
		}
		b.programs = append(b.programs, abs)
	}
	if c.Relay != "" {
		b.relay, _ = filepath.Abs(c.Relay)
	}
	b.disableUserns = supports(ctx, bin, "--disable-userns")
	if err := b.check(ctx); err != nil {
		return nil, err
	}
	return b, nil
}

// Confine implements runner.Sandbox: cmd becomes bwrap running cmd (behind
// the relay), as the project's uid when Parley is root.
func (b *Bubblewrap) Confine(cmd *exec.Cmd, s runner.Spec) error {
	if b.ids != nil {
		if err := b.ids.Confine(cmd, s); err != nil {
			return err
		}
	} else if err := makeDirs(s.WritableDirs); err != nil {
		return err
	}
	return b.wrap(cmd, s, true)
}

// ConfineTool runs cmd, a tool Parley runs on the project's files for
// itself (git on its repository), in the same sandbox as the project's
// runs, with no gateway: it sees spec.Workspace and spec.WritableDirs (made
// if missing), and nothing of the data directory or Parley's home besides.
func (b *Bubblewrap) ConfineTool(cmd *exec.Cmd, s runner.Spec) error {
	if b.ids != nil {
		if err := b.ids.ConfineTool(cmd, s); err != nil {
			return err
		}
	} else if err := makeDirs(s.WritableDirs); err != nil {
		return err
	}
	s.ConfigDir, s.Home = "", "" // a tool sees neither
	return b.wrap(cmd, s, false)
}

func makeDirs(dirs []string) error {
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("writable dir: %w", err)
		}
	}
	return nil
}

// wrap makes cmd bwrap running cmd; with relay, behind sandbox-relay
// forwarding the run's gateway address to Parley's socket.
func (b *Bubblewrap) wrap(cmd *exec.Cmd, s runner.Spec, relay bool) error {
	args := []string{b.bwrap, "--unshare-all", "--unshare-user", "--cap-drop", "ALL", "--new-session", "--die-with-parent"}
	if b.disableUserns {
		args = append(args, "--disable-userns")
	}
	args = append(args, systemBinds()...)
	args = append(args, runBinds(s, append([]string{cmd.Path}, b.programs...), b.hide)...)
	command := cmd.Args
	if relay && b.relay != "" && b.gateway != "" {
		if addr := loopbackAddr(s.ModelURL); addr != "" {
			args = append(args, "--bind", b.gateway, gatewayInside)
			command = append([]string{b.relay, RelayCommand, "--forward", addr + "=" + gatewayInside, "--"}, cmd.Args...)
		}
	}
	if s.Workspace != "" {
		args = append(args, "--chdir", s.Workspace)
	}
	args = append(append(args, "--"), command...)
	args[len(args)-len(cmd.Args)] = cmd.Path
	cmd.Path, cmd.Args = b.bwrap, args
	return nil
}

// loopbackAddr is the host:port of rawURL when its host is a loopback IP.
func loopbackAddr(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	if ip := net.ParseIP(u.Hostname()); ip == nil || !ip.IsLoopback() || u.Port() == "" {
		return ""
	}
	return u.Host
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// PerProjectUIDs reports whether bwrap starts as each project's own uid
// (Parley is root).
func (b *Bubblewrap) PerProjectUIDs() bool { return b.ids != nil }
