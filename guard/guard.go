// Package guard is the small supervisor `parley run-guard` that stands
// between Parley and each claude process, so that no claude outlives the
// Parley that started it.
//
// Why it is needed: Parley sets the parent-death signal (PR_SET_PDEATHSIG)
// on the process it starts, but that reaches that one process only. The
// CLI's own children (the ask_user MCP server, Bash tool commands and what
// they start), a wrapper's child when PARLEY_CLAUDE_BIN is a script, or
// claude inside bwrap, never get it; and the CLI handles SIGTERM
// itself. When Parley is SIGKILLed nobody signals the process group, so
// they went on unsupervised. (Credentials are not the cause: Go's
// os/exec sets PR_SET_PDEATHSIG after it changes the uid, so the kernel does
// not clear it.)
//
// Process groups are not enough either: a command may leave its group and
// session (setsid), and the CLI starts each Bash command in a group of
// its own. So the guard also confines the run before it starts the CLI
// (confine.go): it enters the run's cgroup, which Parley kills whole when
// the run ends, and in uid mode it is pid 1 of the run's own pid
// namespace, whose processes all die with it. It sets the run's OOM
// score and file size cap too.
//
// The guard is the group's leader and Parley's direct child, with the
// parent-death signal set. It starts the real command in its own process
// group and waits. When Parley dies the guard is told (SIGTERM) and its
// parent changes: it signals the whole group SIGTERM (the CLI writes its
// transcript), then SIGKILL after a grace period. When Parley stops a run it
// signals the group itself, as before; the guard then only waits for the
// command and passes its exit status on.
package guard

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Grace is how long the group gets between SIGTERM and SIGKILL once the
// guard's parent has died.
const Grace = 3 * time.Second

// Options are how the guard starts its command.
type Options struct {
	// Nice, if not 0, is the least niceness the guard gives its whole
	// group before it starts the command, which inherits it with
	// everything it starts (see runner.Config.Nice). A guard already
	// nicer keeps its own: raising one's niceness needs no privilege,
	// lowering it needs CAP_SYS_NICE or a raised RLIMIT_NICE, which no
	// process of the run then has either.
	Nice int
	// Confinement is what the guard sets up before it starts the command
	// (confine.go): the run's cgroup, a pid namespace, the run's uid, its
	// OOM score and its largest file.
	Confinement
}

// Main is `run-guard [--nice N] [--cgroup DIR]... [--pid-ns] [--uid U
// --gid G] [--oom-score N] [--max-file BYTES] [--] COMMAND ARGS...`: it
// parses args and runs the command (Run).
func Main(args []string) (int, error) {
	o := Options{Confinement: Confinement{UID: -1, GID: -1}}
	for len(args) > 0 && strings.HasPrefix(args[0], "--") {
		if args[0] == "--" {
			args = args[1:]
			break
		}
		name, v, hasValue := strings.Cut(args[0][2:], "=")
		if !hasValue && name != "pid-ns" {
			if len(args) < 2 {
				return 2, fmt.Errorf("run-guard: --%s wants %s", name, wants[name])
			}
			v, args = args[1], args[1:]
		}
		args = args[1:]
		if err := o.set(name, v); err != nil {
			return 2, err
		}
	}
	return Run(o, args)
}

// wants says what each option takes, for its usage error.
var wants = map[string]string{"nice": "a niceness, 0-19", "cgroup": "a cgroup directory",
	"uid": "a uid", "gid": "a gid", "oom-score": "an OOM score adjustment, -1000-1000", "max-file": "a size in bytes"}

// set sets option name to v.
func (o *Options) set(name, v string) error {
	n, err := strconv.ParseInt(v, 10, 64)
	bad := func(lo, hi int64) bool { return err != nil || n < lo || n > hi }
	switch name {
	case "nice":
		if bad(0, 19) {
			return fmt.Errorf("run-guard: --nice wants 0-19, got %q", v)
		}
		o.Nice = int(n)
		return nil
	case "cgroup":
		o.Cgroups = append(o.Cgroups, v)
		return nil
	case "pid-ns":
		o.PIDNamespace = true
		return nil
	case "uid", "gid":
		if bad(0, 1<<32-2) {
			break
		}
		if name == "uid" {
			o.UID = int(n)
		} else {
			o.GID = int(n)
		}
		return nil
	case "oom-score":
		if bad(-1000, 1000) {
			break
		}
		o.OOMScore = int(n)
		return nil
	case "max-file":
		if bad(1, 1<<62) {
			break
		}
		o.MaxFile = n
		return nil
	default:
		return fmt.Errorf("run-guard: unknown option --%s", name)
	}
	return fmt.Errorf("run-guard: --%s wants %s, got %q", name, wants[name], v)
}

// Run starts args[0] with args[1:] in the guard's process group, with the
// guard's stdin, stdout and stderr, and returns the exit code to exit with:
// the command's, or 128+signal if a signal ended it.
func Run(o Options, args []string) (int, error) {
	if len(args) == 0 {
		return 2, errors.New("run-guard: no command")
	}
	if err := o.confine(); err != nil {
		return 126, fmt.Errorf("run-guard: %w", err)
	}
	if o.Nice != 0 {
		// Only a group of the guard's own: its starter's must keep its own.
		if syscall.Getpgrp() != os.Getpid() {
			return 126, errors.New("run-guard: --nice needs the guard to lead its process group")
		}
		if err := RaiseNice(0, o.Nice); err != nil {
			return 126, fmt.Errorf("run-guard: set the run's niceness to %d: %w", o.Nice, err)
		}
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	o.credential(cmd)
	if o.PIDNamespace {
		return runAsInit(cmd)
	}
	return runInGroup(cmd)
}

// runInGroup runs cmd in the guard's process group and waits for it.
func runInGroup(cmd *exec.Cmd) (int, error) {
	parent := os.Getppid()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		return 127, fmt.Errorf("run-guard: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var kill <-chan time.Time
	for {
		select {
		case <-sigs:
			// Parley stopping the run signals the whole group, the command
			// included: nothing to do but wait. A parent that died sent
			// the parent-death signal to the guard alone.
			if os.Getppid() != parent && kill == nil {
				_ = syscall.Kill(-syscall.Getpgrp(), syscall.SIGTERM)
				kill = time.After(Grace)
			}
		case <-kill:
			_ = syscall.Kill(-syscall.Getpgrp(), syscall.SIGKILL) // the guard too
		case err := <-done:
			if os.Getppid() != parent {
				// Orphaned: nothing of the group may go on (MCP servers,
				// tool commands). This ends the guard as well.
				_ = syscall.Kill(-syscall.Getpgrp(), syscall.SIGKILL)
			}
			return exitCode(cmd, err), nil
		}
	}
}

// RaiseNice gives every thread of process group pgrp (0: the caller's)
// niceness n, unless the caller's is n or more already: raising needs no
// privilege, lowering does. Linux keeps the niceness per thread, and a
// process or thread inherits the one of the thread that made it.
func RaiseNice(pgrp, n int) error {
	p, err := syscall.Getpriority(syscall.PRIO_PROCESS, 0) // the kernel's 20 - nice
	if err != nil {
		return err
	}
	if 20-p >= n {
		return nil
	}
	return syscall.Setpriority(syscall.PRIO_PGRP, pgrp, n)
}

func exitCode(cmd *exec.Cmd, err error) int {
	if cmd.ProcessState == nil {
		return 127
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	if err != nil && cmd.ProcessState.ExitCode() < 0 {
		return 1
	}
	return cmd.ProcessState.ExitCode()
}
