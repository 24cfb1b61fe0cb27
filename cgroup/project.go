package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// projects counts the live runs of each project, so that a project's
// cgroup is made with its first run and removed after its last.
type projects struct {
	mu   sync.Mutex
	runs map[int64]int
}

// NewIn makes a run's cgroup inside its project's: <owner>/project-<id>/
// run-<n>. The project's cgroup holds l, with the Manager's limits where
// l leaves one zero, for all of the project's runs together: ten sessions
// of a project share its memory and tasks, they do not get ten times
// them. A limit is written again at every run's start, so a changed
// setting reaches the project's next run (and its live ones, where the
// kernel takes it: memory already used above a lowered limit is not
// taken back, and the write is then left for the next start). Remove the
// group when the run has ended; the project's cgroup goes with its last
// run.
func (m *Manager) NewIn(project int64, l Limits) (*Group, error) {
	m.projects.mu.Lock()
	defer m.projects.mu.Unlock()
	if m.projects.runs == nil {
		m.projects.runs = map[int64]int{}
	}
	first := m.projects.runs[project] == 0
	parents, err := m.projectGroup(project, m.withDefaults(l), first)
	if err == nil {
		var g *Group
		if g, err = m.runIn(parents); err == nil {
			m.projects.runs[project]++
			g.done = func() { m.runEnded(project) }
			return g, nil
		}
	}
	if first {
		m.removeProject(project)
	}
	return nil, err
}

// projectGroup makes the project's cgroup directories, if missing, and
// writes l into them. A limit that cannot be written fails the project's
// first run only: a later one keeps what its project's cgroup holds.
func (m *Manager) projectGroup(project int64, l Limits, first bool) ([]string, error) {
	var dirs []string
	for _, b := range m.owners {
		dir := filepath.Join(b, m.owner, "project-"+strconv.FormatInt(project, 10))
		if err := m.mkdir(dir); err != nil {
			return nil, err
		}
		if err := writeLimits(dir, l); err != nil && first {
			return nil, fmt.Errorf("limit project %d's cgroup: %w", project, err)
		}
		m.setCPUWeight(dir, l.CPUWeight)
		dirs = append(dirs, dir)
	}
	return dirs, nil
}

// runIn makes a run's cgroup in each of the project's directories.
func (m *Manager) runIn(parents []string) (*Group, error) {
	name := "run-" + strconv.FormatInt(m.next.Add(1), 10)
	g := &Group{v2: m.v2}
	for _, p := range parents {
		dir := filepath.Join(p, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			_ = g.Remove()
			return nil, fmt.Errorf("make cgroup %s: %w", dir, err)
		}
		g.dirs = append(g.dirs, dir)
	}
	return g, nil
}

// withDefaults fills the limits l leaves zero with the Manager's.
func (m *Manager) withDefaults(l Limits) Limits {
	if l.Tasks == 0 {
		l.Tasks = m.limits.Tasks
	}
	if l.Memory == 0 {
		l.Memory = m.limits.Memory
	}
	if l.CPUWeight == 0 {
		l.CPUWeight = m.limits.CPUWeight
	}
	return l
}

// writeLimits writes l's tasks and memory limits into d.
func writeLimits(d string, l Limits) error {
	if l.Tasks > 0 && exists(d, "pids.max") {
		if err := writeFile(d, "pids.max", strconv.Itoa(l.Tasks)); err != nil {
			return err
		}
	}
	if l.Memory > 0 {
		return limitMemory(d, l.Memory)
	}
	return nil
}

// runEnded counts a project's run gone, removing the project's cgroup
// after its last.
func (m *Manager) runEnded(project int64) {
	m.projects.mu.Lock()
	defer m.projects.mu.Unlock()
	if m.projects.runs[project]--; m.projects.runs[project] <= 0 {
		delete(m.projects.runs, project)
		m.removeProject(project)
	}
}

// removeProject removes the project's cgroup directories (empty by now).
func (m *Manager) removeProject(project int64) {
	for _, b := range m.owners {
		_ = os.Remove(filepath.Join(b, m.owner, "project-"+strconv.FormatInt(project, 10)))
	}
}

// projectDirs are the project cgroups under owner, per hierarchy.
func (m *Manager) projectDirs(owner string) []string {
	var dirs []string
	for _, b := range m.owners {
		entries, _ := os.ReadDir(filepath.Join(b, owner))
		for _, e := range entries {
			if e.IsDir() && strings.HasPrefix(e.Name(), "project-") {
				dirs = append(dirs, filepath.Join(b, owner, e.Name()))
			}
		}
	}
	return dirs
}

// removeDirs removes dirs, which must be empty of processes and groups.
func removeDirs(dirs []string) error {
	var errs []error
	for _, d := range dirs {
		if err := os.Remove(d); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove cgroup %s: %w", d, err))
		}
	}
	return errors.Join(errs...)
}

// Limits are the Manager's limits: each project's unless it sets its own.
func (m *Manager) Limits() Limits { return m.limits }
