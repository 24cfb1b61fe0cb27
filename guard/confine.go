package guard

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"parley/cgroup"
)

// Confinement is what the guard does to itself before it starts the run,
// so that the run and everything it starts inherit it.
type Confinement struct {
	// Cgroups are the run's cgroup directories (cgroup.Group.Dirs): the
	// guard enters them first, while it still may (before any uid change).
	Cgroups []string
	// PIDNamespace: the guard is pid 1 of a new pid and mount namespace
	// (Parley started it with CLONE_NEWPID|CLONE_NEWNS, as root). It
	// mounts a /proc of that namespace, so the run sees only its own
	// processes, reaps the orphans that are given to it, and when it
	// exits the kernel kills every process left in the namespace:
	// "If the init process of a PID namespace terminates, the kernel
	// terminates all of the processes in the namespace via a SIGKILL
	// signal" (pid_namespaces(7)).
	PIDNamespace bool
	// UID and GID, if not -1, are the identity the command runs as, with
	// no supplementary groups: the guard itself stays root, so that it
	// can do the above and a run cannot signal or trace it.
	UID, GID int
	// OOMScore, if not 0, is the least oom_score_adj of the run: above
	// Parley's, the kernel's OOM killer picks the run's processes first.
	// Raising one's own needs no privilege; a guard higher already keeps
	// its own.
	OOMScore int
	// MaxFile, if not 0, is the largest file the run may write
	// (RLIMIT_FSIZE, soft and hard): a write past it fails (EFBIG, with
	// SIGXFSZ), and nothing in the run may raise it again.
	MaxFile int64
}

// confine does what c says to the guard itself, in that order.
func (c Confinement) confine() error {
	// no_new_privs, which everything the run starts inherits: no process
	// of it gains a privilege by executing a set-uid or file-capability
	// program (the guard itself may still drop to the run's uid). It is a
	// thread's, and a child inherits the forking thread's, so the guard's
	// goroutine keeps this thread (Run starts the command from it);
	// AllThreadsSyscall is not available in a cgo binary.
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	if err := cgroup.Enter(c.Cgroups); err != nil {
		return err
	}
	if c.PIDNamespace {
		if err := mountProc(); err != nil {
			return err
		}
		if err := privateTmp(c.UID); err != nil { // its own /tmp (tmp.go)
			return err
		}
	}
	if c.OOMScore != 0 {
		if err := raiseOOMScore(c.OOMScore); err != nil {
			return fmt.Errorf("set the run's OOM score: %w", err)
		}
	}
	if c.MaxFile > 0 {
		if err := capFileSize(uint64(c.MaxFile)); err != nil {
			return fmt.Errorf("cap the run's file size: %w", err)
		}
		if err := denyFallocate(); err != nil { // blocks taken at once (fallocate.go)
			return fmt.Errorf("cap the run's file size: %w", err)
		}
	}
	return nil
}

// mountProc gives the guard's new mount namespace a /proc of its pid
// namespace. Mounts are made private first: a mount namespace made by
// clone shares the host's propagation, and the new /proc would otherwise
// appear on the host's /proc too.
func mountProc() error {
	if os.Getpid() != 1 {
		return errors.New("--pid-ns: the guard is not pid 1 of a pid namespace of its own")
	}
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	if err := syscall.Mount("proc", "/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount the run's /proc: %w", err)
	}
	return nil
}

// raiseOOMScore sets the process's oom_score_adj to n unless it is higher.
func raiseOOMScore(n int) error {
	const path = "/proc/self/oom_score_adj"
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if cur, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && cur >= n {
		return nil
	}
	return os.WriteFile(path, []byte(strconv.Itoa(n)), 0)
}

// capFileSize lowers RLIMIT_FSIZE to n, soft and hard; a lower limit stays.
func capFileSize(n uint64) error {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &l); err != nil {
		return err
	}
	l.Cur, l.Max = min(l.Cur, n), min(l.Max, n)
	return syscall.Setrlimit(syscall.RLIMIT_FSIZE, &l)
}

// credential has cmd run as c's uid and gid, if set.
func (c Confinement) credential(cmd *exec.Cmd) {
	if c.UID < 0 {
		return
	}
	gid := c.GID
	if gid < 0 {
		gid = c.UID
	}
	// Groups empty: setgroups([]) drops root's supplementary groups.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{
		Uid: uint32(c.UID), Gid: uint32(gid), Groups: []uint32{}}}
}

// runAsInit runs cmd as the guard's child, the guard being pid 1 of the
// run's pid namespace: it reaps every process that ends in it, and it
// ends once cmd has (the kernel then kills the rest). A signal (Parley
// stopping the run, or its death through the parent-death signal) is
// passed on to every process of the namespace, then SIGKILL after Grace.
func runAsInit(cmd *exec.Cmd) (int, error) {
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGCHLD)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		return 127, fmt.Errorf("run-guard: %w", err)
	}
	pid := cmd.Process.Pid
	var kill <-chan time.Time
	for {
		select {
		case s := <-sigs:
			if s == syscall.SIGCHLD {
				if code, done := reap(pid); done {
					return code, nil
				}
				continue
			}
			if kill == nil {
				_ = syscall.Kill(-1, syscall.SIGTERM) // as pid 1: every other process of the namespace
				kill = time.After(Grace)
			}
		case <-kill:
			_ = syscall.Kill(-1, syscall.SIGKILL)
		}
	}
}

// reap collects every child that has ended; done once pid has, with the
// exit code to pass on. SIGCHLDs merge, so one may stand for many.
func reap(pid int) (code int, done bool) {
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || got <= 0 {
			return 0, false
		}
		if got != pid {
			continue
		}
		if ws.Signaled() {
			return 128 + int(ws.Signal()), true
		}
		return ws.ExitStatus(), true
	}
}
