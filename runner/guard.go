package runner

import (
	"os"
	"os/exec"
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
// A run the sandbox gives a uid, with Parley as root, gets a pid and a
// mount namespace of its own, whose pid 1 is the guard: the guard, still
// root, mounts the namespace's /proc and starts the CLI as the uid
// itself; when the guard ends, for whatever reason, the kernel kills
// every process left in the namespace.
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
		guard = append(guard, "--pid-ns",
			"--uid", strconv.FormatUint(uint64(sp.Credential.Uid), 10),
			"--gid", strconv.FormatUint(uint64(sp.Credential.Gid), 10))
		sp.Credential = nil
		sp.Cloneflags |= syscall.CLONE_NEWPID | syscall.CLONE_NEWNS
	}
	cmd.Args = append(append(guard, "--", cmd.Path), cmd.Args[1:]...)
	cmd.Path = c.GuardExe
}
