package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// postmaster is a running postgres server process started by StartEmbedded.
type postmaster struct {
	cmd    *exec.Cmd
	done   chan struct{} // closed when the process has exited; then err is set
	err    error
	stderr *tailWriter
	log    *slog.Logger

	mu       sync.Mutex
	stopping bool
}

// startPostgres starts postgres on datadir, listening only on a unix socket in sockdir, and
// waits until it accepts connections.
func startPostgres(ctx context.Context, bindir, datadir, sockdir string, cred *syscall.Credential, log *slog.Logger) (*postmaster, error) {
	// Not exec.CommandContext: the cluster must outlive ctx (see StartEmbedded).
	cmd := exec.Command(filepath.Join(bindir, "postgres"), "-D", datadir,
		"-c", "listen_addresses=", "-k", sockdir, "-c", "unix_socket_permissions=0700")
	cmd.Dir = datadir
	cmd.SysProcAttr = postmasterSysProcAttr(cred)
	pm := &postmaster{cmd: cmd, done: make(chan struct{}), stderr: &tailWriter{max: 4096}, log: log}
	cmd.Stderr = pm.stderr
	started := make(chan error, 1)
	// The parent-death signal fires when the thread that forked the child exits, not the
	// process (prctl(2): "the 'parent' in this case is considered to be the thread that
	// created this process"), so that thread stays locked to this goroutine for the
	// child's whole life.
	go func() {
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		pm.err = cmd.Wait()
		close(pm.done)
		pm.mu.Lock()
		stopping := pm.stopping
		pm.mu.Unlock()
		if !stopping {
			log.Error("embedded postgres exited unexpectedly", "err", pm.err, "stderr", pm.stderr.String())
		}
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("embedded postgres: start: %w", err)
	}
	if err := pm.waitReady(ctx, socketURL(sockdir, "postgres")); err != nil {
		return nil, errors.Join(err, pm.stop())
	}
	return pm, nil
}

// waitReady polls until the server accepts a connection, it exits, or pgStartWait passes.
func (pm *postmaster) waitReady(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, pgStartWait)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		conn, err := pgx.Connect(ctx, url)
		if err == nil {
			return conn.Close(ctx)
		}
		select {
		case <-pm.done:
			return fmt.Errorf("embedded postgres exited during start-up: %v: %s", pm.err, pm.stderr.String())
		case <-ctx.Done():
			return fmt.Errorf("embedded postgres did not accept connections: %w (last error: %v): %s", ctx.Err(), err, pm.stderr.String())
		case <-tick.C:
		}
	}
}

// stop asks for a fast shutdown (SIGINT: "disconnect all clients, abort their transactions,
// shut down") and waits; after pgStopWait it escalates to an immediate shutdown (SIGQUIT),
// then SIGKILL.
func (pm *postmaster) stop() error {
	pm.mu.Lock()
	pm.stopping = true
	pm.mu.Unlock()
	for _, sig := range []os.Signal{os.Interrupt, syscall.SIGQUIT, os.Kill} {
		// A signal to a process that already exited is harmless: Wait has not reaped it
		// unless done is closed, and then Signal returns os.ErrProcessDone.
		_ = pm.cmd.Process.Signal(sig)
		select {
		case <-pm.done:
			if pm.err != nil && sig == os.Interrupt {
				return fmt.Errorf("embedded postgres: stop: %w: %s", pm.err, pm.stderr.String())
			}
			if sig != os.Interrupt {
				return fmt.Errorf("embedded postgres: stop: no fast shutdown within %v, sent %v", pgStopWait, sig)
			}
			return nil
		case <-time.After(pgStopWait):
			pm.log.Warn("embedded postgres did not stop in time", "signal", sig.String())
		}
	}
	<-pm.done
	return errors.New("embedded postgres: stop: killed")
}

// tailWriter keeps the last max bytes written to it: postgres's stderr, for error messages.
type tailWriter struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	if len(w.buf) > w.max {
		w.buf = append(w.buf[:0], w.buf[len(w.buf)-w.max:]...)
	}
	return len(p), nil
}

// String returns the kept bytes, trimmed.
func (w *tailWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(bytes.TrimSpace(w.buf))
}
