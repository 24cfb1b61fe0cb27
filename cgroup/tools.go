package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// toolsName is the cgroup, inside a project's, of the tools Parley runs
// on the project's files for itself. Its "run-" prefix makes Close and
// Sweep kill and remove it as they do a run's.
const toolsName = "run-tools"

// ToolsIn is the cgroup of the tools Parley runs on project's files for
// itself (git on its repository), one directory per hierarchy:
// <owner>/project-<id>/run-tools. The repository may name programs git
// runs (a filter, a driver), so what a tool starts counts against the
// project's limits with its runs, never outside them. The project's
// cgroup is made with l (the Manager's limits where l leaves one zero)
// if no run of the project holds it, and is kept, with this group, until
// Close: a tool does not rewrite the limits of a project's live runs.
func (m *Manager) ToolsIn(project int64, l Limits) ([]string, error) {
	m.projects.mu.Lock()
	defer m.projects.mu.Unlock()
	if m.projects.runs == nil {
		m.projects.runs = map[int64]int{}
	}
	first := m.projects.runs[project] == 0
	var parents []string
	if first {
		var err error
		if parents, err = m.projectGroup(project, m.withDefaults(l), true); err != nil {
			m.removeProject(project)
			return nil, err
		}
	} else {
		for _, b := range m.owners {
			parents = append(parents, filepath.Join(b, m.owner, "project-"+strconv.FormatInt(project, 10)))
		}
	}
	held := !first && dirExists(filepath.Join(parents[0], toolsName))
	var dirs []string
	for _, p := range parents {
		dir := filepath.Join(p, toolsName)
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			if first {
				m.removeProject(project)
			}
			return nil, fmt.Errorf("make cgroup %s: %w", dir, err)
		}
		dirs = append(dirs, dir)
	}
	if !held {
		m.projects.runs[project]++ // the project's cgroup is held by this one until Close
	}
	return dirs, nil
}
