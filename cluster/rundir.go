package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"parley/runner"
	"parley/store"
)

// lockName is the file in a replica's runtime directory that the replica
// holds an exclusive flock on for as long as its process lives. The kernel
// drops the lock when the process ends, however it ends, so a sweep can
// tell a directory whose replica still runs from one a crash left, even
// before that replica has registered in the database.
const lockName = ".replica.lock"

// newPrefix names a runtime directory still being made (see OpenRuntimeDir).
const newPrefix = ".new-"

// RuntimeDir is a replica's own directory for its runs' files (ask_user
// configs, --mcp-config files, instructions, the gateway socket), locked
// while the replica runs.
type RuntimeDir struct {
	// Path is the directory: base/<replica id>.
	Path string
	lock *os.File
}

// Close releases the directory's lock; the process ending does too.
func (d *RuntimeDir) Close() error { return d.lock.Close() }

// OpenRuntimeDir makes the runtime directory of st's replica under base,
// locked from the moment it appears under its name, and then sweeps the
// directories of the replicas that no longer run: those whose lock no
// process holds and whose lease is not live. It returns how many run files
// went. Replicas may start together: a directory is made under a temporary
// name, locked, then renamed, so a sweep never sees a replica's directory
// unlocked while that replica lives.
func OpenRuntimeDir(ctx context.Context, st *store.Store, base string) (*RuntimeDir, int, error) {
	id := st.Replica()
	if id == "" || filepath.Base(id) != id || strings.HasPrefix(id, ".") {
		return nil, 0, fmt.Errorf("runtime dir: bad replica id %q", id)
	}
	d, err := makeLocked(base, id)
	if err != nil {
		return nil, 0, err
	}
	n, err := sweepStopped(ctx, st, base, id)
	if err != nil {
		d.Close()
		return nil, n, err
	}
	return d, n, nil
}

// makeLocked makes base/id with its lock held.
func makeLocked(base, id string) (*RuntimeDir, error) {
	tmp := filepath.Join(base, newPrefix+id)
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return nil, fmt.Errorf("runtime dir: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(tmp, lockName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("runtime dir lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("runtime dir lock: %w", err)
	}
	path := filepath.Join(base, id)
	if err := os.Rename(tmp, path); err != nil {
		f.Close()
		return nil, fmt.Errorf("runtime dir: %w", err)
	}
	return &RuntimeDir{Path: path, lock: f}, nil
}

// sweepStopped removes the run files in base (the layout before replicas)
// and the runtime directories of stopped replicas, never self's.
func sweepStopped(ctx context.Context, st *store.Store, base, self string) (int, error) {
	n, err := runner.SweepRunFiles(base)
	if err != nil {
		return n, err
	}
	// The directories are listed before the live replicas are read: a
	// replica registered after this listing has no directory in it.
	entries, err := os.ReadDir(base)
	if err != nil {
		return n, fmt.Errorf("sweep runtime dirs: %w", err)
	}
	live, err := st.LiveReplicas(ctx)
	if err != nil {
		return n, err
	}
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || name == self || slices.Contains(live, name) {
			continue
		}
		if strings.HasPrefix(name, newPrefix) && !stale(filepath.Join(base, name)) {
			continue // a replica making its directory now
		}
		m, err := sweepIfStopped(filepath.Join(base, name))
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// stale reports whether dir is old enough that no replica is still making it.
func stale(dir string) bool {
	fi, err := os.Stat(dir)
	return err == nil && time.Since(fi.ModTime()) > 10*time.Minute
}

// sweepIfStopped removes dir's run files and dir itself unless a live
// process holds its lock.
func sweepIfStopped(dir string) (int, error) {
	f, held := lockOf(dir)
	if held {
		return 0, nil
	}
	if f != nil {
		defer f.Close()
	}
	n, err := runner.SweepRunFiles(dir)
	if err != nil {
		return n, err
	}
	if err := os.Remove(filepath.Join(dir, lockName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return n, fmt.Errorf("sweep runtime dir: %w", err)
	}
	_ = os.Remove(dir) // only if empty: what else is there is not a run file
	return n, nil
}

// lockOf takes dir's lock when no live process holds it; held reports that
// one does. f (nil when dir has no lock file) holds the lock until closed.
func lockOf(dir string) (f *os.File, held bool) {
	f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_RDWR, 0)
	if err != nil {
		return nil, false
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, errors.Is(err, syscall.EWOULDBLOCK)
	}
	return f, false
}
