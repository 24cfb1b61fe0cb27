package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// limit writes the Manager's limits into g's directories. A controller
// that a hierarchy lacks is skipped (v2 without a delegated memory
// controller, say); a limit that cannot be written where its file is
// fails the run's start.
func (m *Manager) limit(g *Group) error {
	l := m.limits
	for _, d := range g.dirs {
		if l.Tasks > 0 && exists(d, "pids.max") {
			if err := writeFile(d, "pids.max", strconv.Itoa(l.Tasks)); err != nil {
				return err
			}
		}
		if l.Memory > 0 {
			if err := limitMemory(d, l.Memory); err != nil {
				return err
			}
		}
		m.setCPUWeight(d, l.CPUWeight)
	}
	return nil
}

// limitMemory caps memory in d, and memory plus swap at the same figure
// where the kernel accounts swap (no swap on top of the limit). Over it,
// the kernel's OOM killer picks a process of this cgroup only.
func limitMemory(d string, n int64) error {
	v := strconv.FormatInt(n, 10)
	switch {
	case exists(d, "memory.max"): // v2
		if err := writeFile(d, "memory.max", v); err != nil {
			return err
		}
		if exists(d, "memory.swap.max") {
			return writeFile(d, "memory.swap.max", "0")
		}
	case exists(d, "memory.limit_in_bytes"): // v1: the memory limit first, memsw may not be below it
		if err := writeFile(d, "memory.limit_in_bytes", v); err != nil {
			return err
		}
		if exists(d, "memory.memsw.limit_in_bytes") {
			return writeFile(d, "memory.memsw.limit_in_bytes", v)
		}
	}
	return nil
}

// setCPUWeight gives d weight w (1-10000, 100 the default) against its
// siblings: v2's cpu.weight, or v1's cpu.shares (1024 the default). A
// weight is a preference, not a limit: one that cannot be set is left.
func (m *Manager) setCPUWeight(d string, w int) {
	if w <= 0 {
		return
	}
	if exists(d, "cpu.weight") {
		_ = writeFile(d, "cpu.weight", strconv.Itoa(min(w, 10000)))
	} else if exists(d, "cpu.shares") {
		_ = writeFile(d, "cpu.shares", strconv.Itoa(max(2, w*1024/100)))
	}
}

// delegate readies v2 cgroup dir, this process's own, to hold children
// with controllers: the kernel lets a cgroup other than the root hand
// controllers to its children only while it holds no process itself
// ("no internal processes"), so this process moves into a child of its
// own first, "parley-server". It fails if dir is not writable (nothing
// delegated to this user).
func delegate(dir string) error {
	if err := syscall.Access(filepath.Join(dir, "cgroup.procs"), 2 /* W_OK */); err != nil {
		return fmt.Errorf("cgroup %s is not delegated to this user: %w", dir, err)
	}
	if enableControllers(dir) == nil {
		return nil
	}
	server := filepath.Join(dir, "parley-server")
	if err := os.Mkdir(server, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("make cgroup %s: %w", server, err)
	}
	if err := writeFile(server, "cgroup.procs", "0"); err != nil {
		return fmt.Errorf("move Parley out of %s: %w", dir, err)
	}
	// Still refused: other processes share Parley's cgroup. Runs get a
	// cgroup without the controllers then; killing them still works.
	_ = enableControllers(dir)
	return nil
}

// enableControllers hands the controllers Parley uses that dir has on to
// dir's children (cgroup.subtree_control).
func enableControllers(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return err
	}
	var want []string
	for _, c := range strings.Fields(string(b)) {
		if slices.Contains(v2Controllers, c) {
			want = append(want, "+"+c)
		}
	}
	if len(want) == 0 {
		return nil
	}
	return writeFile(dir, "cgroup.subtree_control", strings.Join(want, " "))
}
