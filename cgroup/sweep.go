package cgroup

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ownerName names the parent directory of process pid's runs:
// "<pid>-<start time>-<random>". The pid and its start time (in clock
// ticks since boot) tell whether the process lives; the random part keeps
// two Managers of one process apart (tests).
func ownerName(pid int) (string, error) {
	start, err := startTime(pid)
	if err != nil {
		return "", err
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%d-%d-%s", pid, start, hex.EncodeToString(b)), nil
}

// startTime reads when process pid started: field 22 of /proc/PID/stat,
// counted after the command's closing parenthesis (the name may hold any
// character).
func startTime(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("read process %d: %w", pid, err)
	}
	i := strings.LastIndexByte(string(b), ')')
	var fields []string
	if i >= 0 {
		fields = strings.Fields(string(b[i+1:]))
	}
	if len(fields) < 20 {
		return 0, fmt.Errorf("read process %d: unexpected stat %q", pid, b)
	}
	return strconv.ParseUint(fields[19], 10, 64)
}

// ownerLives says whether the process that made owner directory name
// still runs (the same pid, started at the same time).
func ownerLives(name string) bool {
	parts := strings.SplitN(name, "-", 3)
	if len(parts) < 2 {
		return false
	}
	pid, err1 := strconv.Atoi(parts[0])
	want, err2 := strconv.ParseUint(parts[1], 10, 64)
	if err1 != nil || err2 != nil {
		return false
	}
	got, err := startTime(pid)
	return err == nil && got == want
}

// Sweep kills and removes every run cgroup whose Parley is gone (a crash,
// a SIGKILL, a machine where Parley restarted), with the parent it left,
// and returns how many run cgroups it removed. Call it at start: what a
// run left behind when its Parley died does not live on. Another live
// Parley's runs are left alone.
func (m *Manager) Sweep() (int, error) {
	owners, err := os.ReadDir(m.owners[0])
	if err != nil {
		return 0, fmt.Errorf("sweep cgroups: %w", err)
	}
	n := 0
	var errs []error
	for _, o := range owners {
		if !o.IsDir() || o.Name() == m.owner || ownerLives(o.Name()) {
			continue
		}
		for _, g := range m.groupsOf(o.Name()) {
			if err := g.Remove(); err != nil {
				errs = append(errs, err)
			}
			n++
		}
		if err := removeDirs(m.projectDirs(o.Name())); err != nil {
			errs = append(errs, fmt.Errorf("sweep cgroups: %w", err))
		}
		for _, b := range m.owners {
			if err := os.Remove(filepath.Join(b, o.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, fmt.Errorf("sweep cgroups: %w", err))
			}
		}
	}
	return n, errors.Join(errs...)
}

// groupsOf are the run groups under owner, by name across hierarchies:
// run-N, and project-P/run-N of NewIn.
func (m *Manager) groupsOf(owner string) []*Group {
	names := map[string]bool{}
	for _, b := range m.owners {
		entries, _ := os.ReadDir(filepath.Join(b, owner))
		for _, e := range entries {
			if e.IsDir() && strings.HasPrefix(e.Name(), "run-") {
				names[e.Name()] = true
			}
			if e.IsDir() && strings.HasPrefix(e.Name(), "project-") {
				runs, _ := os.ReadDir(filepath.Join(b, owner, e.Name()))
				for _, r := range runs {
					if r.IsDir() && strings.HasPrefix(r.Name(), "run-") {
						names[filepath.Join(e.Name(), r.Name())] = true
					}
				}
			}
		}
	}
	var gs []*Group
	for name := range names {
		g := &Group{v2: m.v2}
		for _, b := range m.owners {
			if d := filepath.Join(b, owner, name); dirExists(d) {
				g.dirs = append(g.dirs, d)
			}
		}
		gs = append(gs, g)
	}
	return gs
}

func dirExists(d string) bool {
	fi, err := os.Stat(d)
	return err == nil && fi.IsDir()
}
