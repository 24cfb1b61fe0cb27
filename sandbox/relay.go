package sandbox

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
)

// RelayCommand is the subcommand of the parley binary that runs RelayMain.
const RelayCommand = "sandbox-relay"

// RelayMain is `parley sandbox-relay [--forward ADDR=SOCKET]... -- COMMAND
// ARGS...`, the first process of a run inside bubblewrap. The run has a
// network namespace of its own (--unshare-net): its loopback reaches
// nothing of the host's, so the CLI's ANTHROPIC_BASE_URL
// (http://127.0.0.1:PORT, Parley's model gateway, and the ask relay beside
// it) would reach nobody. The relay listens on each ADDR of the run's own
// loopback and passes every connection on to SOCKET, a unix socket Parley
// serves and bubblewrap mounts in; then it starts COMMAND with its stdin,
// stdout and stderr, passes on the signals it gets, and returns the exit
// code to exit with (128+signal if a signal ended it).
func RelayMain(args []string) (int, error) {
	var forwards [][2]string
	for len(args) > 1 && args[0] == "--forward" {
		addr, sock, ok := strings.Cut(args[1], "=")
		if !ok {
			return 2, fmt.Errorf("%s: --forward wants ADDR=SOCKET, got %q", RelayCommand, args[1])
		}
		forwards, args = append(forwards, [2]string{addr, sock}), args[2:]
	}
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		return 2, fmt.Errorf("%s: no command", RelayCommand)
	}
	for _, f := range forwards {
		ln, err := net.Listen("tcp", f[0])
		if err != nil {
			return 1, fmt.Errorf("%s: %w", RelayCommand, err)
		}
		defer ln.Close()
		// Ends when the process does: the relay lives as long as its run.
		go acceptLoop(ln, f[1])
	}
	return runChild(args)
}

// runChild runs args with the relay's stdio, passing signals on.
func runChild(args []string) (int, error) {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer signal.Stop(sigs)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		return 127, fmt.Errorf("%s: %w", RelayCommand, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case s := <-sigs:
			_ = cmd.Process.Signal(s)
		case err := <-done:
			var ee *exec.ExitError
			if err != nil && !errors.As(err, &ee) {
				return 1, fmt.Errorf("%s: %w", RelayCommand, err)
			}
			if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				return 128 + int(ws.Signal()), nil
			}
			return cmd.ProcessState.ExitCode(), nil
		}
	}
}

// acceptLoop passes each connection to ln on to the unix socket sock.
func acceptLoop(ln net.Listener, sock string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go pipe(c, sock)
	}
}

// pipe copies both ways between c and a new connection to sock, passing
// each side's end of writing on (half-close), and closes both once both
// directions are done.
func pipe(c net.Conn, sock string) {
	defer c.Close()
	u, err := net.Dial("unix", sock)
	if err != nil {
		return
	}
	defer u.Close()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); copyHalf(u, c) }()
	go func() { defer wg.Done(); copyHalf(c, u) }()
	wg.Wait()
}

type closeWriter interface {
	net.Conn
	CloseWrite() error
}

func copyHalf(dst, src net.Conn) {
	_, err := io.Copy(dst, src)
	if cw, ok := dst.(closeWriter); ok && err == nil {
		_ = cw.CloseWrite()
		return
	}
	// An error either way: end both directions.
	dst.Close()
	src.Close()
}
