package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"parley/runner"
)

// supports reports whether bwrap's --help lists flag.
func supports(ctx context.Context, bwrap, flag string) bool {
	out, _ := exec.CommandContext(ctx, bwrap, "--help").CombinedOutput()
	return strings.Contains(string(out), flag+" ")
}

// check starts the sandbox once (with the relay, if any) running true.
func (b *Bubblewrap) check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/true")
	cmd.Dir = "/"
	if err := b.wrap(cmd, runner.Spec{}, false); err != nil {
		return err
	}
	if out, err := b.startChecked(cmd); err != nil {
		return fmt.Errorf("bubblewrap cannot make a sandbox here (user namespaces may be disabled, or the container forbids them): %w: %.300s", err, out)
	}
	return nil
}

// Check starts `claude --version` in the sandbox as a run starts (behind
// the relay, as the uid runs have), so a CLI that cannot start there (one
// that needs a file outside the allowlist) is reported at start-up, not at
// the first run.
func (b *Bubblewrap) Check(ctx context.Context, claudeBin string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	home, err := os.MkdirTemp("", "parley-check-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(home)
	if b.ids != nil {
		if err := os.Chown(home, b.ids.first, b.ids.first); err != nil {
			return err
		}
	}
	cmd := exec.CommandContext(ctx, claudeBin, "--version")
	cmd.Env = []string{"HOME=" + home, "CLAUDE_CONFIG_DIR=" + home, "DISABLE_AUTOUPDATER=1", "PATH=/usr/local/bin:/usr/bin:/bin"}
	cmd.Dir = home
	if err := b.wrap(cmd, runner.Spec{Workspace: home}, false); err != nil {
		return err
	}
	if out, err := b.startChecked(cmd); err != nil {
		return fmt.Errorf("the claude CLI %s does not start in bubblewrap: %w: %.300s", claudeBin, err, out)
	}
	return nil
}

// startChecked runs cmd, a wrapped check, behind the relay (with nothing
// to forward) and as the range's first uid when Parley is root.
func (b *Bubblewrap) startChecked(cmd *exec.Cmd) ([]byte, error) {
	if b.relay != "" {
		i := len(cmd.Args) - 1
		for cmd.Args[i] != "--" {
			i--
		}
		cmd.Args = append(cmd.Args[:i+1], append([]string{b.relay, RelayCommand, "--"}, cmd.Args[i+1:]...)...)
	}
	if b.ids != nil {
		setCredential(cmd, b.ids.first)
	}
	return cmd.CombinedOutput()
}
