package cgroup

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestHierarchies(t *testing.T) {
	for _, tc := range []struct {
		name, mountinfo, self string
		want                  []string
		v2                    bool
	}{{
		name: "hybrid: v1 holds the controllers",
		mountinfo: `32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`,
		self: "9:name=systemd:/\n8:pids:/\n6:freezer:/\n4:memory:/process_api/x\n1:cpu:/\n0::/\n",
		want: []string{"/sys/fs/cgroup/pids", "/sys/fs/cgroup/memory/process_api/x", "/sys/fs/cgroup/cpu", "/sys/fs/cgroup/freezer"},
	}, {
		name: "v1, cpu with cpuacct, in a container's subtree",
		mountinfo: `30 25 0:26 /docker/abc /sys/fs/cgroup/cpu,cpuacct ro - cgroup cgroup rw,cpu,cpuacct
31 25 0:27 /docker/abc /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids
`,
		self: "3:cpu,cpuacct:/docker/abc\n2:pids:/docker/abc/x\n",
		want: []string{"/sys/fs/cgroup/pids/x", "/sys/fs/cgroup/cpu,cpuacct"},
	}, {
		name:      "v2 only",
		mountinfo: "29 23 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate\n",
		self:      "0::/system.slice/parley.service\n",
		want:      []string{"/sys/fs/cgroup/system.slice/parley.service"}, v2: true,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			mi, self := filepath.Join(dir, "mountinfo"), filepath.Join(dir, "cgroup")
			os.WriteFile(mi, []byte(tc.mountinfo), 0o644)
			os.WriteFile(self, []byte(tc.self), 0o644)
			got, v2, err := hierarchies(mi, self)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" || v2 != tc.v2 {
				t.Errorf("hierarchies (-want +got, v2 %v):\n%s", v2, diff)
			}
		})
	}
}

// manager opens a Manager on this machine with limits l, or skips.
func manager(t *testing.T, l Limits) *Manager {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("making cgroups needs root, or a delegated v2 subtree")
	}
	m, err := Open(l)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Error(err)
		}
	})
	return m
}

// startIn starts script in g; it waits for a line on stdin before it
// runs, so that it is in g before it starts anything. It returns what
// the script prints on stdout, line by line.
func startIn(t *testing.T, g *Group, script string) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command("sh", "-c", "read go; "+script)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if err := g.Join(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	in.Write([]byte("go\n"))
	return cmd, bufio.NewScanner(out)
}

// alive says whether pid is a process that has not exited.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && !strings.HasPrefix(string(b[i+2:]), "Z")
}

// TestRemoveKillsWhatLeftTheGroup: processes that left the run's process
// group and session (setsid, a group of their own, as the CLI gives each
// Bash command) die with the cgroup, and its directories go.
func TestRemoveKillsWhatLeftTheGroup(t *testing.T) {
	m := manager(t, Defaults)
	g, err := m.New()
	if err != nil {
		t.Fatal(err)
	}
	_, out := startIn(t, g, `setsid sleep 300 >/dev/null & echo $!; (set -m; sleep 300 >/dev/null & echo $!); echo end; read x`)
	var pids []int
	for out.Scan() && out.Text() != "end" {
		pid, _ := strconv.Atoi(out.Text())
		pids = append(pids, pid)
	}
	if len(pids) != 2 || !alive(pids[0]) || !alive(pids[1]) {
		t.Fatalf("the daemons did not start: %v", pids)
	}
	if err := g.Remove(); err != nil {
		t.Fatal(err)
	}
	waitDead(t, pids...)
	for _, d := range g.Dirs() {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there: %v", d, err)
		}
	}
}

func waitDead(t *testing.T, pids ...int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for alive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("process %d still runs", pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// TestTasksLimitStopsAForkBomb: a group of 20 tasks refuses the 21st.
func TestTasksLimitStopsAForkBomb(t *testing.T) {
	m := manager(t, Limits{Tasks: 20})
	g, err := m.New()
	if err != nil {
		t.Fatal(err)
	}
	cmd, out := startIn(t, g, `(for i in $(seq 60); do sleep 300 >/dev/null 2>&1 & done) 2>/dev/null; echo started; read x`)
	if !out.Scan() || out.Text() != "started" {
		t.Fatalf("the script said %q", out.Text())
	}
	pids, err := g.Procs()
	if err != nil {
		t.Fatal(err)
	}
	if len(pids) > 20 || len(pids) < 10 {
		t.Errorf("%d processes in a group of at most 20 tasks", len(pids))
	}
	if err := g.Remove(); err != nil {
		t.Fatal(err)
	}
	waitDead(t, append(pids, cmd.Process.Pid)...)
}

// TestMemoryLimitKillsInTheGroup: a process that takes more than the
// group's memory is killed by the kernel, in its group; the test lives.
func TestMemoryLimitKillsInTheGroup(t *testing.T) {
	m := manager(t, Limits{Memory: 64 << 20})
	g, err := m.New()
	if err != nil {
		t.Fatal(err)
	}
	// tail keeps a line whole in memory: 512 MiB without a newline.
	_, out := startIn(t, g, `head -c 536870912 /dev/zero | tail >/dev/null; echo "status $?"`)
	if !out.Scan() || out.Text() != "status 137" {
		t.Errorf("the hog ended with %q, want status 137 (SIGKILL)", out.Text())
	}
	if err := g.Remove(); err != nil {
		t.Fatal(err)
	}
}

// TestSweepRemovesTheGroupsOfADeadParley: a Parley that died left a run
// group with a daemon in it; the next Parley's sweep kills it and
// removes the group and its parent, and leaves a live Parley's alone.
func TestSweepRemovesTheGroupsOfADeadParley(t *testing.T) {
	live := manager(t, Defaults)
	kept, err := live.New()
	if err != nil {
		t.Fatal(err)
	}
	defer kept.Remove()
	hs, v2, err := hierarchies("/proc/self/mountinfo", "/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	dead, err := open(hs, v2, "999999999-1-dead", Defaults) // no such process
	if err != nil {
		t.Fatal(err)
	}
	left, err := dead.New()
	if err != nil {
		t.Fatal(err)
	}
	_, out := startIn(t, left, `setsid sleep 300 >/dev/null & echo $!; read x`)
	out.Scan()
	daemon, _ := strconv.Atoi(out.Text())
	_, keptOut := startIn(t, kept, `echo ready; read x`)
	keptOut.Scan()

	next := manager(t, Defaults)
	n, err := next.Sweep()
	if err != nil || n != 1 {
		t.Fatalf("sweep removed %d groups, %v; want 1", n, err)
	}
	waitDead(t, daemon)
	for _, d := range dead.Dirs() {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the dead Parley's %s is still there", d)
		}
	}
	if pids, _ := kept.Procs(); len(pids) == 0 {
		t.Error("the sweep emptied a live Parley's run group")
	}
}

// TestV2KillOnTheUnifiedHierarchy runs the v2 path where a unified
// hierarchy is mounted beside v1 (a hybrid machine; it has no
// controllers there, but cgroup.kill).
func TestV2KillOnTheUnifiedHierarchy(t *testing.T) {
	const unified = "/sys/fs/cgroup/unified"
	if os.Geteuid() != 0 || !exists(unified, "cgroup.procs") {
		t.Skip("no writable unified hierarchy beside v1")
	}
	own, err := readOwn("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	m, err := open([]string{filepath.Join(unified, own[""])}, true, "v2test-"+strconv.Itoa(os.Getpid()), Defaults)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	g, err := m.New()
	if err != nil {
		t.Fatal(err)
	}
	if !exists(g.dirs[0], "cgroup.kill") {
		t.Skip("this kernel has no cgroup.kill")
	}
	_, out := startIn(t, g, `setsid sleep 300 >/dev/null & echo $!; read x`)
	out.Scan()
	daemon, _ := strconv.Atoi(out.Text())
	if err := g.Remove(); err != nil {
		t.Fatal(err)
	}
	waitDead(t, daemon)
	_ = syscall.Kill(daemon, 0)
}
