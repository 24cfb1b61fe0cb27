// Package cgroup gives each run of claude a control group of its own, under
// a parent of this Parley's: limits on its tasks, memory and CPU weight,
// and a kill that reaches every process in it, whatever process group or
// session the process made for itself (setsid, the CLI's own group per
// Bash command).
//
// It works on cgroup v2 (the unified hierarchy, in a subtree this process
// may write: root's, or one delegated to its user) and on v1 (the pids,
// memory, cpu and freezer hierarchies). On a hybrid machine, where v1
// holds the controllers and v2 none, v1 is used.
//
// Layout, in each hierarchy: <Parley's own cgroup>/parley/<owner>/run-<n>.
// The owner names this process (pid and start time), so that a Parley
// started later on the same machine can tell that the process which made
// a group is gone and remove what it left (Manager.Sweep).
package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
)

// Limits are what each run's cgroup (or, with NewIn, each project's) may
// hold. Zero leaves a limit unset.
type Limits struct {
	Tasks     int   // processes and threads (pids.max)
	Memory    int64 // bytes of memory; swap is not given on top of it
	CPUWeight int   // 1-10000, v2's cpu.weight; 100 is the default weight
}

// Defaults are limits a normal session never reaches (the CLI peaks near
// 230 MB and a few dozen threads, a build a few hundred) and a fork bomb
// or a runaway allocation does; runs weigh half of what Parley does.
var Defaults = Limits{Tasks: 512, Memory: 2 << 30, CPUWeight: 50}

// Manager makes the runs' cgroups of one Parley process.
type Manager struct {
	v2     bool
	owners []string // <own cgroup>/parley per hierarchy
	owner  string   // this process's directory name under each of owners
	limits Limits
	next   atomic.Int64
	// projects counts each project's live runs (NewIn).
	projects projects
}

// controllers are the v1 hierarchies Parley uses, and the v2 controllers.
var (
	v1Controllers = []string{"pids", "memory", "cpu", "freezer"}
	v2Controllers = []string{"pids", "memory", "cpu"}
)

// Open finds the hierarchies of this machine and makes this process's
// parent directory in each. It fails when no hierarchy can be written
// (a non-root Parley on v1, or on v2 without a delegated subtree).
func Open(l Limits) (*Manager, error) {
	hs, v2, err := hierarchies("/proc/self/mountinfo", "/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	owner, err := ownerName(os.Getpid())
	if err != nil {
		return nil, err
	}
	return open(hs, v2, owner, l)
}

// open makes <h>/parley/<owner> in each hierarchy h.
func open(hs []string, v2 bool, owner string, l Limits) (*Manager, error) {
	m := &Manager{v2: v2, owner: owner, limits: l}
	var errs []error
	for _, h := range hs {
		if v2 {
			if err := delegate(h); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		base := filepath.Join(h, "parley")
		if err := m.mkdir(base); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := m.mkdir(filepath.Join(base, owner)); err != nil {
			errs = append(errs, err)
			continue
		}
		m.owners = append(m.owners, base)
	}
	if len(m.owners) == 0 {
		return nil, fmt.Errorf("no cgroup hierarchy can be written: %w", errors.Join(errs...))
	}
	// Every run together weighs what one run does against Parley.
	for _, b := range m.owners {
		m.setCPUWeight(filepath.Join(b, owner), l.CPUWeight)
	}
	return m, nil
}

// mkdir makes dir if missing and, on v2, hands the controllers on to its
// children.
func (m *Manager) mkdir(dir string) error {
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("make cgroup %s: %w", dir, err)
	}
	if m.v2 {
		enableControllers(dir)
	}
	return nil
}

// Version is 2 on the unified hierarchy, else 1.
func (m *Manager) Version() int {
	if m.v2 {
		return 2
	}
	return 1
}

// Dirs are this process's parent directories, one per hierarchy.
func (m *Manager) Dirs() []string {
	d := make([]string, len(m.owners))
	for i, b := range m.owners {
		d[i] = filepath.Join(b, m.owner)
	}
	return d
}

// Close removes this process's parent directories; call it after every
// run has ended. A run group still there is killed and removed first.
func (m *Manager) Close() error {
	var errs []error
	for _, g := range m.groupsOf(m.owner) {
		errs = append(errs, g.Remove())
	}
	errs = append(errs, removeDirs(m.projectDirs(m.owner)))
	for _, d := range m.Dirs() {
		if err := os.Remove(d); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove cgroup %s: %w", d, err))
		}
	}
	return errors.Join(errs...)
}

// New makes a run's cgroup with the Manager's limits. Remove it when the
// run has ended.
func (m *Manager) New() (*Group, error) {
	name := "run-" + strconv.FormatInt(m.next.Add(1), 10)
	g := &Group{v2: m.v2}
	for _, b := range m.owners {
		dir := filepath.Join(b, m.owner, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			_ = g.Remove()
			return nil, fmt.Errorf("make cgroup %s: %w", dir, err)
		}
		g.dirs = append(g.dirs, dir)
	}
	if err := m.limit(g); err != nil {
		_ = g.Remove()
		return nil, err
	}
	return g, nil
}

// writeFile writes v to the control file dir/name.
func writeFile(dir, name, v string) error {
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(v)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s to %s: %w", strings.TrimSpace(v), filepath.Join(dir, name), err)
	}
	return nil
}

// exists says whether dir has the control file name.
func exists(dir, name string) bool {
	_, err := os.Stat(filepath.Join(dir, name))
	return err == nil
}
