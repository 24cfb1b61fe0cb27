package guard

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
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
		code, err := Run(os.Args[1:])
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
