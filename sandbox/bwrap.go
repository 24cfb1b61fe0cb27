package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"parley/runner"
)

// Bubblewrap confines runs when Parley cannot give them uids of their own
// (it does not run as root): each claude starts inside bwrap (Debian's
// bubblewrap) in new user, mount, pid, ipc and uts namespaces, with the
// whole file system read-only, the data directory, Parley's home and /tmp
// hidden under empty tmpfs mounts, and only the run's own directories and
// files mounted back (its workspace, config dir and home read-write; its
// ask_user or MCP config and the programs it starts read-only). Its /proc shows
// only its own processes.
type Bubblewrap struct {
	bwrap    string
	hide     []string // directories replaced by an empty tmpfs
	programs []string // files mounted back read-only at their own paths
}

// NewBubblewrap finds bwrap and checks that it can make the namespaces
// here. hide are the directories a run must not see (the data directory,
// Parley's home, the private PostgreSQL's socket directory); programs are
// the files it must be able to start (claude, parley).
func NewBubblewrap(ctx context.Context, hide, programs []string) (*Bubblewrap, error) {
	bin, err := exec.LookPath("bwrap")
	if err != nil {
		return nil, errors.New("bubblewrap (bwrap) is not installed; install it (Debian: apt-get install bubblewrap) or run Parley as root for per-project uids")
	}
	b := &Bubblewrap{bwrap: bin}
	for _, d := range hide {
		if d = filepath.Clean(d); d != "/" && d != "." {
			b.hide = append(b.hide, d)
		}
	}
	for _, p := range programs {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, err
		}
		b.programs = append(b.programs, abs)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "true")
	if err := b.wrap(cmd, runner.Spec{Workspace: os.TempDir()}); err != nil {
		return nil, err
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("bubblewrap cannot make a sandbox here (user namespaces may be disabled, or the container forbids them): %w: %.300s", err, out)
	}
	return b, nil
}

// Confine implements runner.Sandbox: cmd becomes bwrap running cmd.
func (b *Bubblewrap) Confine(cmd *exec.Cmd, s runner.Spec) error {
	for _, d := range s.WritableDirs {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("writable dir: %w", err)
		}
	}
	return b.wrap(cmd, s)
}

// ConfineTool runs cmd, a tool Parley runs on the project's files for
// itself (git on its repository), in the same sandbox as the project's
// runs: it sees spec.Workspace and spec.WritableDirs (made if missing),
// and nothing of the data directory or Parley's home besides.
func (b *Bubblewrap) ConfineTool(cmd *exec.Cmd, s runner.Spec) error {
	s.ConfigDir, s.Home = "", "" // a tool needs neither
	return b.Confine(cmd, s)
}

func (b *Bubblewrap) wrap(cmd *exec.Cmd, s runner.Spec) error {
	args := []string{b.bwrap,
		"--die-with-parent", "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--tmpfs", "/var/tmp",
	}
	for _, d := range b.hide {
		if exists(d) {
			args = append(args, "--tmpfs", d)
		}
	}
	rw := append([]string{s.Workspace, s.ConfigDir, s.Home}, s.WritableDirs...)
	for _, d := range rw {
		if d != "" {
			args = append(args, "--bind", d, d)
		}
	}
	ro := append([]string{cmd.Path}, b.programs...)
	ro = append(ro, s.AskConfigPath, s.MCPConfigPath) // the run's token files
	for _, f := range ro {
		if f != "" && exists(f) {
			args = append(args, "--ro-bind", f, f)
		}
	}
	if s.Workspace != "" {
		args = append(args, "--chdir", s.Workspace)
	}
	args = append(append(args, "--"), cmd.Args...)
	args[len(args)-len(cmd.Args)] = cmd.Path
	cmd.Path, cmd.Args = b.bwrap, args
	return nil
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
