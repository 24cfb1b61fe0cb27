package runner

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"

	"parley/cgroup"
)

// guard makes cmd start under `parley run-guard` (package guard): the
// guard is the process Parley starts, leads the process group and carries
// the parent-death signal, and when Parley dies it ends the whole group,
// which the parent-death signal alone never reached (the CLI's MCP servers
// and tool commands, a wrapper's child, bwrap's). It wraps whatever the
// sandbox made of cmd (bwrap, a uid). It gives the group the run's
// niceness (Config.Nice), OOM score and file size cap, and enters the
// run's cgroup g (if any) before it starts the CLI.
//
// A run the sandbox gives a uid, with Parley as root, has the guard
// start the CLI as the uid: the guard stays root to enter the cgroup
// and, with Config.PIDNamespace, to be pid 1 of a pid and mount namespace
// of the run's own, whose /proc it mounts; when that guard ends, for
// whatever reason, the kernel kills every process left in the namespace.
func (c Config) guard(cmd *exec.Cmd, g *cgroup.Group) {
	if c.GuardExe == "" {
		return
	}
	guard := []string{c.GuardExe, "run-guard"}
	if c.Nice != 0 {
		guard = append(guard, "--nice", strconv.Itoa(c.Nice))
	}
	if g != nil {
		for _, d := range g.Dirs() {
			guard = append(guard, "--cgroup", d)
		}
	}
	if c.OOMScore != 0 {
		guard = append(guard, "--oom-score", strconv.Itoa(c.OOMScore))
	}
	if c.MaxFile > 0 {
		guard = append(guard, "--max-file", strconv.FormatInt(c.MaxFile, 10))
	}
	if sp := cmd.SysProcAttr; sp != nil && sp.Credential != nil && os.Geteuid() == 0 {
		guard = append(guard, c.identity(sp)...)
	}
	cmd.Args = append(append(guard, "--", cmd.Path), cmd.Args[1:]...)
	cmd.Path = c.GuardExe
}

// GuardName is the small guard binary (cmd/parley-guard: package guard
// and the standard library, no more) installed beside parley.
const GuardName = "parley-guard"

// GuardBeside is the guard a parley at self starts each run under:
// GuardName in the same directory when it is there and executable, else
// self, whose `run-guard` is the same guard (package guard) in the whole
// binary. Both take the same arguments. The small one is what a live
// session keeps: about 3 MB of private memory against the whole binary's
// 8-27 MB, and no package init of the web server's (docs/instant.md).
func GuardBeside(self string) string {
	small := filepath.Join(filepath.Dir(self), GuardName)
	if fi, err := os.Stat(small); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
		return small
	}
	return self
}

// identity moves the uid the sandbox set on a command into the guard's
// arguments (the guard, root, switches to it itself), with a pid and mount
// namespace where Config.PIDNamespace allows.
func (c Config) identity(sp *syscall.SysProcAttr) []string {
	args := []string{"--uid", strconv.FormatUint(uint64(sp.Credential.Uid), 10),
		"--gid", strconv.FormatUint(uint64(sp.Credential.Gid), 10)}
	sp.Credential = nil
	if c.PIDNamespace {
		args = append(args, "--pid-ns")
		sp.Cloneflags |= syscall.CLONE_NEWPID | syscall.CLONE_NEWNS
	}
	return args
}

// ToolSandbox starts a tool Parley runs on a project's files for itself
// (git on its repository) as the project's runs are confined.
type ToolSandbox interface {
	ConfineTool(cmd *exec.Cmd, spec Spec) error
}

// GuardTools has every tool t confines start under the guard in a pid
// namespace of its own, as a run does: git runs what the repository names
// (a filter, a hook), which is the runs' to write, and what that starts
// then dies when git ends instead of living on as the project's uid
// beside later runs. Without a guard or pid namespaces it returns t.
func (c Config) GuardTools(t ToolSandbox) ToolSandbox {
	if t == nil || c.GuardExe == "" || !c.PIDNamespace || os.Geteuid() != 0 {
		return t
	}
	return guardedTools{t: t, c: c}
}

type guardedTools struct {
	t ToolSandbox
	c Config
}

func (g guardedTools) ConfineTool(cmd *exec.Cmd, spec Spec) error {
	if err := g.t.ConfineTool(cmd, spec); err != nil {
		return err
	}
	sp := cmd.SysProcAttr
	if sp == nil || sp.Credential == nil {
		return nil // not given a uid: not a project's tool
	}
	guard := append([]string{g.c.GuardExe, "run-guard"}, g.c.identity(sp)...)
	if g.c.Cgroups != nil { // in the project's cgroup, under its limits, with its runs
		dirs, err := g.c.Cgroups.ToolsIn(spec.ProjectID, spec.Limits)
		if err != nil {
			return fmt.Errorf("the project's cgroup: %w", err)
		}
		for _, d := range dirs {
			guard = append(guard, "--cgroup", d)
		}
	}
	cmd.Args = append(append(guard, "--", cmd.Path), cmd.Args[1:]...)
	cmd.Path = g.c.GuardExe
	return nil
}

// ProbePIDNamespace starts `guardExe run-guard --pid-ns -- true` as a
// run's guard would be (CLONE_NEWPID|CLONE_NEWNS): nil if this process
// may give runs a pid namespace (root with CAP_SYS_ADMIN, a mount of
// proc allowed; a container that dropped the capability may not).
func ProbePIDNamespace(guardExe string) error {
	cmd := exec.Command(guardExe, "run-guard", "--pid-ns", "--", "true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Cloneflags: syscall.CLONE_NEWPID | syscall.CLONE_NEWNS}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%w %s", err, bytes.TrimSpace(out))
	}
	return nil
}
