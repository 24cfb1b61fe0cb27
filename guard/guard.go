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
}

// Main is `run-guard [--nice N] [--] COMMAND ARGS...`: it parses args and
// runs the command (Run).
func Main(args []string) (int, error) {
	var o Options
	if len(args) > 0 && (args[0] == "--nice" || strings.HasPrefix(args[0], "--nice=")) {
		v, ok := strings.CutPrefix(args[0], "--nice=")
		if !ok {
			if len(args) < 2 {
				return 2, errors.New("run-guard: --nice wants a niceness, 0-19")
			}
			v, args = args[1], args[1:]
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 19 {
			return 2, fmt.Errorf("run-guard: --nice wants 0-19, got %q", v)
		}
		o.Nice, args = n, args[1:]
	}
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	return Run(o, args)
}

// Run starts args[0] with args[1:] in the guard's process group, with the
// guard's stdin, stdout and stderr, and returns the exit code to exit with:
// the command's, or 128+signal if a signal ended it.
func Run(o Options, args []string) (int, error) {
	if len(args) == 0 {
		return 2, errors.New("run-guard: no command")
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
	parent := os.Getppid()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer signal.Stop(sigs)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
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
