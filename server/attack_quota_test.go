package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"parley/quota"
	"parley/runner/fakeapi"
	"parley/store"
)

// Issue 27, item 2: per-project limits, with the real CLI in uid mode
// under run-guard, as serve starts runs. A project's runs share its
// cgroup's tasks and memory, and its files a disk quota that Parley
// measures (package quota) where the file system has none.

// quotaEnv is confineEnv with the project's run limits set to l and the
// disk watcher running.
func quotaEnv(t *testing.T, l store.RunLimits, commands ...string) (*env, *ws, string) {
	t.Helper()
	return quotaEnvIn(t, "uid", l, commands...)
}

// quotaEnvIn is quotaEnv with runs confined by isolation (uid, bwrap).
func quotaEnvIn(t *testing.T, isolation string, l store.RunLimits, commands ...string) (*env, *ws, string) {
	t.Helper()
	var sc fakeapi.Scenario
	for _, c := range commands {
		sc = append(sc, fakeapi.Step{ToolName: "Bash", ToolInput: map[string]any{"command": c}},
			fakeapi.Step{Text: "OUT " + fakeapi.ToolResultPlaceholder})
	}
	e := newEnv(t, sc, envOptions{quiet: true, isolation: isolation, guard: true, runConfig: confineRuns(t)})
	settings := e.project.ProjectSettings
	settings.AllowedTools = []string{"Bash"}
	if err := e.st.UpdateProjectSettings(t.Context(), e.project.ID, settings, ""); err != nil {
		t.Fatal(err)
	}
	if err := e.st.SetProjectRunLimits(t.Context(), e.project.ID, l); err != nil {
		t.Fatal(err)
	}
	// As serve does (every 10 s at most, more often while files grow).
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- e.srv.WatchDisk(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	s := e.newSession()
	return e, e.dial(s.ID, 0), s.ID
}

// TestQuotaStopsARunThatFillsTheDisk: a project with a 50 MiB quota
// whose Bash writes 10 MiB files in a loop (1 GiB if let) is stopped,
// its run's processes killed; the next prompt is refused with the
// sentence that says the use, the quota and what to do; the server
// stays healthy.
func TestQuotaStopsARunThatFillsTheDisk(t *testing.T) {
	for _, isolation := range []string{"uid", "bwrap"} {
		t.Run(isolation, func(t *testing.T) { quotaStopsARunThatFillsTheDisk(t, isolation) })
	}
}

func quotaStopsARunThatFillsTheDisk(t *testing.T, isolation string) {
	mark := marker(t)
	fill := fmt.Sprintf(`sh -c 'i=0; while [ $i -lt 100 ]; do head -c 10485760 /dev/zero > fill-$i || break; i=$((i+1)); sleep 0.2; done; echo wrote=$i' %s`, mark)
	e, w, id := quotaEnvIn(t, isolation, store.RunLimits{Disk: 50 << 20}, fill)
	w.prompt("call 0")
	w.waitFor(120*time.Second, "Claude was stopped. This project", "more than its disk quota of 50 MiB")
	waitGone(t, mark, "the run over its quota", 15*time.Second)
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, live := e.sup.Live(id); !live {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the session's run still lives 15 s after its processes died")
		}
	}
	files, _ := filepath.Glob(filepath.Join(WorkspaceDir(e.dataDir, e.project), "fill-*"))
	used, err := quota.Usage(projectDir(e.dataDir, e.project.ID))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("stopped after %d files; the project takes %s", len(files), quota.Bytes(used))
	if len(files) >= 100 || used > 300<<20 {
		t.Errorf("the run wrote %d files (%s) before it was stopped", len(files), quota.Bytes(used))
	}
	w.prompt("call 1")
	w.waitFor(30*time.Second, `toast-error" role="alert">This project&#39;s files take`, "more than its disk quota of 50 MiB",
		"an admin raises the quota in the project&#39;s settings")
	if n := len(e.fake.Requests()); n > 1 {
		t.Errorf("%d model requests; the prompt over the quota reached the model", n)
	}
	e.healthy()
	for _, f := range files {
		os.Remove(f)
	}
}

// TestQuotaProjectTaskLimit: a project's task limit (128) below the
// server's (512) stops a fork bomb at the project's limit.
func TestQuotaProjectTaskLimit(t *testing.T) {
	mark := marker(t)
	e, w, id := quotaEnv(t, store.RunLimits{Tasks: 128}, forkBomb(mark))
	out := e.bash(w, 0)
	// Each of the bomb's shells (which hold mark) has a sleep: two tasks.
	n := len(procsWith(mark))
	t.Logf("the bomb holds %d shells, each with a sleep", n)
	if strings.Contains(out, "spawned=1000") || 2*n > 128 {
		t.Errorf("the fork bomb holds %d shells and their sleeps (%q), over the project's 128 tasks", n, out)
	}
	e.healthy()
	e.sup.Stop(id)
	waitGone(t, mark, "the session stopped", 15*time.Second)
}

// TestQuotaSessionsShareTheProjectsMemory: two sessions of a project
// with 1 GiB of memory cannot hold 2 × 500 MiB beside their two CLIs:
// the kernel kills one of the two in the project's cgroup. Each run
// alone would be under the server's 2 GiB.
func TestQuotaSessionsShareTheProjectsMemory(t *testing.T) {
	mark := marker(t)
	holdA := fmt.Sprintf(`nohup python3 -c "import sys, time; b = b'x' * (500 << 20); time.sleep(300)" %s >/dev/null 2>&1 & sleep 3; echo A-holds`, mark)
	hogB := `python3 -c "b = b'x' * (500 << 20); print('B-held')"; echo "status=$?"`
	e, w, _ := quotaEnv(t, store.RunLimits{Memory: 1 << 30}, holdA, hogB)
	t.Cleanup(func() {
		for _, pid := range procsWith(mark) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	if out := e.bash(w, 0); !strings.Contains(out, "A-holds") {
		t.Fatalf("session 1's holder did not start: %q", out)
	}
	waitThere(t, mark)
	s2 := e.newSession()
	outB := e.bash(e.dial(s2.ID, 0), 1)
	time.Sleep(time.Second)
	heldA := len(procsWith(mark)) > 0
	t.Logf("session 1's holder alive: %v; session 2: %q", heldA, outB)
	if heldA && strings.Contains(outB, "status=0") {
		t.Errorf("both sessions hold 500 MiB beside their CLIs in a project of 1 GiB")
	}
	e.healthy()
}

// TestQuotaFallocateKeepSize: fallocate with FALLOC_FL_KEEP_SIZE takes
// disk blocks without growing the file, so RLIMIT_FSIZE does not stop it,
// and a run could take the disk beside PostgreSQL within one measurement
// (1 GiB here, instantly, under a 50 MiB quota). It is refused.
func TestQuotaFallocateKeepSize(t *testing.T) {
	for _, isolation := range []string{"uid", "bwrap"} {
		t.Run(isolation, func(t *testing.T) {
			e, w, _ := quotaEnvIn(t, isolation, store.RunLimits{Disk: 50 << 20},
				`touch kept; fallocate -n -l 1G kept; echo "rc=$?"; stat -c "blocks=%b" kept; rm -f kept`)
			out := e.bash(w, 0)
			if strings.Contains(out, "rc=0") || strings.Contains(out, "blocks=2097") {
				t.Errorf("fallocate --keep-size took 1 GiB under a 50 MiB quota: %q", out)
			}
			e.healthy()
		})
	}
}

// TestQuotaCountsWhatARunWritesToTmp: with per-project uids a run may
// write where every user may (/tmp, /var/tmp, /dev/shm). There, each
// run's own temporary directory stands in for them (the guard binds it in
// the run's mount namespace), so 60 MiB written to /var/tmp and /dev/shm
// count against a 50 MiB quota, and nothing of the run reaches the
// machine's. (/tmp too, but not here: the test's data dir is under /tmp,
// and a shared directory holding the run's own files is left as it is.)
func TestQuotaCountsWhatARunWritesToTmp(t *testing.T) {
	mark := marker(t)
	paths := []string{filepath.Join("/var/tmp", mark+"-a"), filepath.Join("/dev/shm", mark+"-b")}
	t.Cleanup(func() {
		for _, p := range paths {
			os.Remove(p)
		}
	})
	e, w, _ := quotaEnv(t, store.RunLimits{Disk: 50 << 20},
		fmt.Sprintf(`for p in %s; do head -c 31457280 /dev/zero > $p && echo "WROTE $p"; done; sleep 10; echo END`, strings.Join(paths, " ")))
	w.prompt("call 0")
	page := waitAny(t, w, 120*time.Second, "OUT ", "more than its disk quota of 50 MiB")
	if !strings.Contains(page, "more than its disk quota of 50 MiB") {
		t.Errorf("60 MiB in /var/tmp and /dev/shm went unseen by a 50 MiB quota")
	}
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("the run's file is in the machine's %s", filepath.Dir(p))
		}
	}
	e.healthy()
}
