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
	"time"
)

// killWait bounds how long Kill waits for the group to empty.
const killWait = 10 * time.Second

// Group is one run's cgroup: a directory in each hierarchy.
type Group struct {
	v2   bool
	dirs []string
	// done, if set, is called once the group is removed: its project's
	// cgroup goes with the project's last run (Manager.NewIn).
	done func()
}

// Dirs are the group's directories, one per hierarchy: a process joins
// the group by writing its pid (or 0, itself) into cgroup.procs of each.
func (g *Group) Dirs() []string { return slices.Clone(g.dirs) }

// Join moves process pid, with all its threads, into the group.
func (g *Group) Join(pid int) error {
	for _, d := range g.dirs {
		if err := writeFile(d, "cgroup.procs", strconv.Itoa(pid)); err != nil {
			return fmt.Errorf("join cgroup: %w", err)
		}
	}
	return nil
}

// Procs are the processes in the group (pids in this process's pid
// namespace).
func (g *Group) Procs() ([]int, error) {
	var pids []int
	for _, d := range g.dirs {
		b, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read cgroup: %w", err)
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil && !slices.Contains(pids, pid) {
				pids = append(pids, pid)
			}
		}
	}
	return pids, nil
}

// Kill ends every process in the group and returns once it is empty.
// v2 has the kernel do it (cgroup.kill, Linux 5.14); otherwise the group
// is frozen, so that nothing in it forks while the list is read, each
// process gets SIGKILL, and the group is thawed for them to die, again
// until none is left.
func (g *Group) Kill() error {
	deadline := time.Now().Add(killWait)
	for {
		pids, err := g.Procs()
		if err != nil {
			return err
		}
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroup %s: %d processes left after SIGKILL", g.dirs[0], len(pids))
		}
		if !g.killAll() {
			g.freeze(true)
			for _, pid := range pids {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			g.freeze(false)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// killAll writes v2's cgroup.kill; false if there is none.
func (g *Group) killAll() bool {
	for _, d := range g.dirs {
		if exists(d, "cgroup.kill") {
			return writeFile(d, "cgroup.kill", "1") == nil
		}
	}
	return false
}

// freeze freezes (or thaws) the group where a freezer is at hand: v1's
// freezer.state, or v2's cgroup.freeze. Freezing waits up to a second
// for every task to stop: a task that does not is killed all the same.
func (g *Group) freeze(on bool) {
	for _, d := range g.dirs {
		switch {
		case exists(d, "freezer.state"):
			state := map[bool]string{true: "FROZEN", false: "THAWED"}[on]
			if writeFile(d, "freezer.state", state) != nil || !on {
				return
			}
			for range 100 {
				if b, _ := os.ReadFile(filepath.Join(d, "freezer.state")); strings.TrimSpace(string(b)) == "FROZEN" {
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
			return
		case exists(d, "cgroup.freeze"):
			_ = writeFile(d, "cgroup.freeze", map[bool]string{true: "1", false: "0"}[on])
			return
		}
	}
}

// Remove kills what is left in the group and removes its directories.
func (g *Group) Remove() error {
	err := g.Kill()
	deadline := time.Now().Add(killWait)
	for _, d := range g.dirs {
		for {
			rerr := os.Remove(d)
			if rerr == nil || errors.Is(rerr, os.ErrNotExist) {
				break
			}
			// A task that was killed may still be leaving (EBUSY).
			if !errors.Is(rerr, syscall.EBUSY) || time.Now().After(deadline) {
				err = errors.Join(err, fmt.Errorf("remove cgroup: %w", rerr))
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if g.done != nil {
		g.done()
		g.done = nil
	}
	return err
}

// Enter moves the calling process, with all its threads, into the
// cgroup directories dirs (Group.Dirs): what it starts afterwards is
// born there. It is how a run's guard joins its run's group before it
// starts the CLI.
func Enter(dirs []string) error {
	for _, d := range dirs {
		// "0" is the writer itself, in v1 and v2 alike, whatever pid
		// namespace it is in.
		if err := writeFile(d, "cgroup.procs", "0"); err != nil {
			return fmt.Errorf("enter cgroup: %w", err)
		}
	}
	return nil
}
