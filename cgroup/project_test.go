package cgroup

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestProjectRunsShareItsTasks: two runs of one project together hold
// at most the project's 20 tasks, whatever each would hold alone; the
// project's cgroup goes with its last run.
func TestProjectRunsShareItsTasks(t *testing.T) {
	m := manager(t, Limits{Tasks: 500})
	a, err := m.NewIn(7, Limits{Tasks: 20})
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.NewIn(7, Limits{Tasks: 20})
	if err != nil {
		t.Fatal(err)
	}
	if _, out := startIn(t, a, `for i in $(seq 12); do sleep 300 >/dev/null 2>&1 & done; echo started; read x`); !out.Scan() || out.Text() != "started" {
		t.Fatalf("the first run's script said %q", out.Text())
	}
	// The second run's shell dies of a fork it cannot have: what it
	// started before stays.
	_, out := startIn(t, b, `echo started; for i in $(seq 40); do sleep 300 >/dev/null 2>&1 & done 2>/dev/null; read x`)
	if !out.Scan() || out.Text() != "started" {
		t.Fatalf("the second run's script said %q", out.Text())
	}
	time.Sleep(500 * time.Millisecond)
	pa, _ := a.Procs()
	pb, _ := b.Procs()
	if n := len(pa) + len(pb); n > 20 || len(pa) < 5 || len(pb) < 1 {
		t.Errorf("the two runs hold %d+%d processes, want at most 20 together", len(pa), len(pb))
	}
	parent := filepath.Dir(a.Dirs()[0])
	if got, want := filepath.Base(parent), "project-"+strconv.Itoa(7); got != want {
		t.Errorf("the run's parent is %s, want %s", got, want)
	}
	if err := a.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(parent); err != nil {
		t.Errorf("the project's cgroup went with its first run: %v", err)
	}
	if err := b.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(parent); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the project's cgroup %s is still there after its last run: %v", parent, err)
	}
}

// TestCloseRemovesProjectGroups: Close kills a project's runs and
// removes the project's cgroup too.
func TestCloseRemovesProjectGroups(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making cgroups needs root")
	}
	m, err := Open(Defaults)
	if err != nil {
		t.Fatal(err)
	}
	g, err := m.NewIn(3, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	_, out := startIn(t, g, `echo started; sleep 300`)
	out.Scan()
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	for _, d := range m.Dirs() {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there: %v", d, err)
		}
	}
}

// TestSweepRemovesADeadParleysProjectGroups: a Parley died with a run in
// a project's cgroup; the next one's sweep kills the run's daemon and
// removes the run's and the project's cgroups. The project's CPU weight
// is on the project's cgroup.
func TestSweepRemovesADeadParleysProjectGroups(t *testing.T) {
	manager(t, Defaults) // skips unless cgroups can be made
	hs, v2, err := hierarchies("/proc/self/mountinfo", "/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	dead, err := open(hs, v2, "999999998-1-dead", Defaults) // no such process
	if err != nil {
		t.Fatal(err)
	}
	left, err := dead.NewIn(9, Limits{CPUWeight: 20})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range left.Dirs() {
		if b, err := os.ReadFile(filepath.Join(filepath.Dir(d), "cpu.shares")); err == nil && strings.TrimSpace(string(b)) != "204" {
			t.Errorf("the project's cpu.shares is %s, want 204 (weight 20)", b)
		}
	}
	_, out := startIn(t, left, `setsid sleep 300 >/dev/null & echo $!; read x`)
	out.Scan()
	daemon, _ := strconv.Atoi(out.Text())
	// At least 1: another test's dead Parley may have left groups too.
	if n, err := manager(t, Defaults).Sweep(); err != nil || n < 1 {
		t.Fatalf("sweep removed %d groups, %v; want the dead Parley's run", n, err)
	}
	waitDead(t, daemon)
	for _, d := range dead.Dirs() {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the dead Parley's %s is still there", d)
		}
	}
}
