package runner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"parley/askuser"
)

// SweepRunFiles removes the per-run files a crash left in the runtime dir
// (the relay configs of `parley mcp-askuser`, ASK_USER_CONFIG, the
// --mcp-config files of HTTP ask_user and the runs' instructions files)
// and returns how many it removed.
// Call it at start, before any run: their tokens are dead.
func SweepRunFiles(dir string) (int, error) {
	n, err := askuser.SweepConfigs(dir)
	if err != nil {
		return n, err
	}
	paths, err := filepath.Glob(filepath.Join(dir, "mcp-*.json"))
	if err != nil {
		return n, fmt.Errorf("sweep run files: %w", err)
	}
	instructions, err := filepath.Glob(filepath.Join(dir, instructionsPrefix+"*.md"))
	if err != nil {
		return n, fmt.Errorf("sweep run files: %w", err)
	}
	probes, err := filepath.Glob(filepath.Join(dir, probePrefix+"*"))
	if err != nil {
		return n, fmt.Errorf("sweep run files: %w", err)
	}
	paths = append(append(paths, instructions...), probes...)
	for _, p := range paths {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return n, fmt.Errorf("sweep run files: %w", err)
		}
		n++
	}
	return n, nil
}

// ensureRuntimeDir makes the runtime dir again when it is missing (an
// operator's cleanup, or another replica's sweep that erred), so one lost
// directory does not fail every new run until a restart. "" = none used.
func ensureRuntimeDir(dir string) error {
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("make the runtime dir: %w", err)
	}
	return nil
}

// probeBytes is what CheckRunFiles writes: more than a run's ask_user
// config or --mcp-config file takes.
const probeBytes = 4096

// probePrefix names CheckRunFiles' probe files (swept at start if left).
const probePrefix = "probe-"

// CheckRunFiles reports whether a run could write its files now (the
// ask_user config, the instructions) by writing and removing a probe of
// probeBytes in the runtime dir, made again if missing. A new session is
// refused before it is made when its first run could not start.
func (s *Supervisor) CheckRunFiles() error {
	if s == nil || s.runtimeDir == "" {
		return nil
	}
	if err := ensureRuntimeDir(s.runtimeDir); err != nil {
		return err
	}
	f, err := os.CreateTemp(s.runtimeDir, probePrefix+"*")
	if err != nil {
		return fmt.Errorf("write a run's files: %w", err)
	}
	// No fsync: a full local file system refuses the write itself (its
	// blocks are reserved then), and NFS reports it at close.
	_, err = f.Write(make([]byte, probeBytes))
	err = errors.Join(err, f.Close(), os.Remove(f.Name()))
	if err != nil {
		return fmt.Errorf("write a run's files: %w", err)
	}
	return nil
}
