package runner

import (
	"os/exec"
	"strconv"
)

// guard makes cmd start under `parley run-guard` (package guard): the
// guard is the process Parley starts, leads the process group and carries
// the parent-death signal, and when Parley dies it ends the whole group,
// which the parent-death signal alone never reached (the CLI's MCP servers
// and tool commands, a wrapper's child, bwrap's). It wraps whatever the
// sandbox made of cmd (bwrap, a uid), so the guard runs with the run's uid.
// It gives the group the run's niceness (Config.Nice) before it starts it.
func (c Config) guard(cmd *exec.Cmd) {
	if c.GuardExe == "" {
		return
	}
	guard := []string{c.GuardExe, "run-guard"}
	if c.Nice != 0 {
		guard = append(guard, "--nice", strconv.Itoa(c.Nice))
	}
	cmd.Args = append(append(guard, "--", cmd.Path), cmd.Args[1:]...)
	cmd.Path = c.GuardExe
}
