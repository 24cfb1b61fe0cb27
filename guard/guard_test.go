package guard

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain lets the test binary play the guard ("guard") and Parley
// ("parent": starts the guard as Parley does, prints its pid, waits).
func TestMain(m *testing.M) {
	switch os.Getenv("GUARD_TEST_ROLE") {
	case "guard":
		code, err := Main(os.Args[1:])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
		os.Exit(code)
	case "parent":
		cmd := exec.Command(os.Args[0], os.Args[1:]...)
		cmd.Env = append(os.Environ(), "GUARD_TEST_ROLE=guard")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
		cmd.Stdout = os.Stdout
		if err := cmd.Start(); err != nil {
			os.Exit(1)
		}
		fmt.Println(cmd.Process.Pid)
		_ = cmd.Wait()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestRunPassesTheExitStatusOn(t *testing.T) {
	for _, tc := range []struct {
		script string
		want   int
	}{{"exit 0", 0}, {"exit 7", 7}, {"kill -TERM $$", 128 + int(syscall.SIGTERM)}} {
		cmd := exec.Command(os.Args[0], "sh", "-c", tc.script)
		cmd.Env = append(os.Environ(), "GUARD_TEST_ROLE=guard")
		err := cmd.Run()
		if got := cmd.ProcessState.ExitCode(); got != tc.want {
			t.Errorf("%q: guard exited %d (%v), want %d", tc.script, got, err, tc.want)
		}
	}
}

// TestNiceReachesTheCommand: with --nice the command and what it
// starts run at that niceness; the test's own process keeps its own.
func TestNiceReachesTheCommand(t *testing.T) {
	own := niceOf(t, "/proc/self/stat")
	cmd := exec.Command(os.Args[0], "--nice", "7", "--", "sh", "-c", `awk '{print $19}' /proc/$$/stat; sh -c "awk '{print \$19}' /proc/self/stat" & wait`)
	cmd.Env = append(os.Environ(), "GUARD_TEST_ROLE=guard")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // as Parley starts it
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(string(out)); len(got) != 2 || got[0] != "7" || got[1] != "7" {
		t.Errorf("the command and its child ran at niceness %q, want 7 and 7", got)
	}
	if after := niceOf(t, "/proc/self/stat"); after != own {
		t.Errorf("the test's own niceness changed: %d → %d", own, after)
	}
	// In its starter's group, the guard would renice the starter: it refuses.
	cmd = exec.Command(os.Args[0], "--nice", "7", "true")
	cmd.Env = append(os.Environ(), "GUARD_TEST_ROLE=guard")
	out, err = cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "lead its process group") {
		t.Errorf("a guard in its starter's group: %v %q", err, out)
	}
	if after := niceOf(t, "/proc/self/stat"); after != own {
		t.Errorf("the test's own niceness changed: %d → %d", own, after)
	}
	// A guard nicer already keeps its own (lowering it needs a privilege
	// the guard may not have); --nice=N is the same as --nice N.
	cmd = exec.Command("nice", "-n", "12", os.Args[0], "--nice=7", "--", "sh", "-c", `awk '{print $19}' /proc/$$/stat`)
	cmd.Env = append(os.Environ(), "GUARD_TEST_ROLE=guard")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if out, err := cmd.Output(); err != nil || strings.TrimSpace(string(out)) != "12" {
		t.Errorf("a guard at niceness 12 told --nice=7: %v, the command ran at %q, want 12", err, out)
	}
	for _, bad := range [][]string{{"--nice", "20", "true"}, {"--nice", "-1", "true"}, {"--nice", "low", "true"}, {"--nice=20", "true"}, {"--nice"}} {
		cmd = exec.Command(os.Args[0], bad...)
		cmd.Env = append(os.Environ(), "GUARD_TEST_ROLE=guard")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "--nice wants") {
			t.Errorf("%q: %v %q", bad, err, out)
		}
	}
}

// niceOf reads the niceness from a /proc stat file (field 19).
func niceOf(t *testing.T, path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	n, err := strconv.Atoi(f[16]) // fields after the comm start at 3
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestParentDeathEndsTheGroup: the guard's parent is SIGKILLed; the
// guarded command and what it started in the background (which the
// parent-death signal never reaches) all end.
func TestParentDeathEndsTheGroup(t *testing.T) {
	parent := exec.Command(os.Args[0], "sh", "-c", `trap "" TERM; sleep 300 & echo $!; sleep 300`)
	parent.Env = append(os.Environ(), "GUARD_TEST_ROLE=parent")
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = parent.Process.Kill(); _ = parent.Wait() })
	r := bufio.NewReader(out)
	var pids []int
	for range 2 { // the guard's pid, then the background sleep's
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(line))
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, pid)
	}
	guard := pids[0]
	t.Cleanup(func() { _ = syscall.Kill(-guard, syscall.SIGKILL) })
	if err := parent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(Grace + 10*time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for syscall.Kill(-guard, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("the guard's group (pgid %d, background sleep %d) outlived its parent", guard, pids[1])
		}
		<-tick.C
	}
}

// TestConfinementReachesTheCommand: as a run's guard in uid mode (root,
// a pid and mount namespace of its own), the command runs as the uid,
// sees only its namespace's processes, has the OOM score and file size
// cap, and what it left running dies with the guard.
func TestConfinementReachesTheCommand(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a pid namespace needs root")
	}
	const mark = "guard-confine-test-daemon"
	script := `id -u; ls -d /proc/[0-9]* | wc -l; cat /proc/self/oom_score_adj; ` +
		`setsid sh -c 'sleep 300' ` + mark + ` </dev/null >/dev/null 2>&1 & ` +
		`head -c 2000000 /dev/zero > "$F"; echo "write $?"`
	file := filepath.Join(t.TempDir(), "big")
	os.Chmod(filepath.Dir(file), 0o777)
	os.Chmod(filepath.Dir(filepath.Dir(file)), 0o711) // t.TempDir's parent is 0700
	cmd := exec.Command(os.Args[0], "--pid-ns", "--uid", "65534", "--gid", "65534", "--oom-score", "800",
		"--max-file", "1000000", "--", "sh", "-c", script)
	cmd.Env = append(os.Environ(), "GUARD_TEST_ROLE=guard", "F="+file)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Cloneflags: syscall.CLONE_NEWPID | syscall.CLONE_NEWNS}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	got := strings.Fields(string(out))
	if len(got) < 5 || got[0] != "65534" || got[2] != "800" || !strings.HasSuffix(string(out), "write 153\n") {
		t.Errorf("the command printed %q; want uid 65534, a few processes, OOM score 800, write 153 (SIGXFSZ)", got)
	}
	if n, _ := strconv.Atoi(got[1]); n > 5 {
		t.Errorf("the command saw %d processes in /proc, want its namespace's few", n)
	}
	if fi, err := os.Stat(file); err != nil || fi.Size() != 1000000 {
		t.Errorf("the file: %v, %v; want 1000000 bytes", fi, err)
	}
	if pids := pidsWith(mark); len(pids) > 0 {
		for _, p := range pids {
			syscall.Kill(p, syscall.SIGKILL)
		}
		t.Errorf("the daemon outlived the guard: %v", pids)
	}
	// The host's /proc is the host's still: the namespace's was its own.
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", os.Getpid())); err != nil {
		t.Errorf("the host's /proc changed: %v", err)
	}
}

// pidsWith are the processes whose command line holds mark.
func pidsWith(mark string) []int {
	var pids []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		if b, err := os.ReadFile(d + "/cmdline"); err == nil && strings.Contains(string(b), mark) {
			pid, _ := strconv.Atoi(filepath.Base(d))
			pids = append(pids, pid)
		}
	}
	return pids
}

func TestMainRefusesBadOptions(t *testing.T) {
	for _, bad := range [][]string{{"--uid", "-1", "true"}, {"--oom-score", "2000", "true"}, {"--max-file", "0", "true"}, {"--cgroup"}, {"--what", "true"}} {
		if code, err := Main(bad); code != 2 || err == nil {
			t.Errorf("%q: %d %v, want a usage error", bad, code, err)
		}
	}
}
