package main

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

	"parley/guard"
)

// TestMain lets the test binary play Parley ("parent"): it starts the
// guard binary named in GUARD_BIN as the runner does (its own group, the
// parent-death signal), prints the guard's pid and waits.
func TestMain(m *testing.M) {
	if os.Getenv("GUARD_TEST_ROLE") == "parent" {
		cmd := exec.Command(os.Getenv("GUARD_BIN"), os.Args[1:]...)
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

// TestGuardLinksOnlyThePackageGuard: parley-guard is built from package
// guard (and the cgroup package it enters runs' cgroups with), the
// standard library and x/sys, nothing of the web server's:
// no highlighter, no database driver, no views, whose package init every
// start of the whole binary pays for.
func TestGuardLinksOnlyThePackageGuard(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range strings.Fields(string(out)) {
		switch {
		case p == "parley/guard", p == "parley/cgroup", p == "parley/cmd/parley-guard", strings.HasPrefix(p, "golang.org/x/sys/"):
		default:
			t.Errorf("parley-guard links %s; it should need package guard alone", p)
		}
	}
}

// TestSmallGuardEndsTheGroupWhenParleyDies: the parley-guard binary,
// started as a run's guard, ends the command and what it left in the
// background when its parent (Parley) is SIGKILLed, as `parley run-guard`
// does (guard.TestParentDeathEndsTheGroup); it takes the leading
// "run-guard" the runner passes.
func TestSmallGuardEndsTheGroupWhenParleyDies(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "parley-guard")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build parley-guard: %v\n%s", err, out)
	}
	parent := exec.Command(os.Args[0], "run-guard", "--", "sh", "-c", `trap "" TERM; sleep 300 & echo $!; sleep 300`)
	parent.Env = append(os.Environ(), "GUARD_TEST_ROLE=parent", "GUARD_BIN="+bin)
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
	g := pids[0]
	t.Cleanup(func() { _ = syscall.Kill(-g, syscall.SIGKILL) })
	if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", g)); exe != bin {
		t.Fatalf("the guard runs %q, want %s", exe, bin)
	}
	if err := parent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(guard.Grace + 10*time.Second)
	for syscall.Kill(-g, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("the guard's group (pgid %d, background sleep %d) outlived its parent", g, pids[1])
		}
		time.Sleep(50 * time.Millisecond)
	}
}
