package server

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"parley/quota"
	"parley/store"
)

// Red-team attacks on the per-project disk quota (package quota), which
// Parley measures in the project's directory every few seconds.

// TestRedteamQuotaOutsideTheProjectDir: with per-project uids a run's
// Bash may write wherever every user may: /tmp, /var/tmp and /dev/shm
// (memory). Under a 50 MiB quota it writes a file in each (each capped
// at the quota by RLIMIT_FSIZE). What it wrote
// must count against the quota, or not outlive the run; in bubblewrap
// those directories are the sandbox's own.
func TestRedteamQuotaOutsideTheProjectDir(t *testing.T) {
	for _, isolation := range []string{"uid", "bwrap"} {
		t.Run(isolation, func(t *testing.T) { quotaOutside(t, isolation) })
	}
}

func quotaOutside(t *testing.T, isolation string) {
	mark := marker(t)
	var paths []string
	for _, d := range []string{"/tmp", "/var/tmp", "/dev/shm"} {
		paths = append(paths, filepath.Join(d, mark))
	}
	fill := fmt.Sprintf(`for p in %s; do head -c 69905066 /dev/zero > $p && echo "WROTE $p"; done; sleep 12; echo END`, strings.Join(paths, " "))
	t.Cleanup(func() {
		for _, p := range paths {
			os.Remove(p)
		}
	})
	e, w, id := quotaEnvIn(t, isolation, store.RunLimits{Disk: 50 << 20}, fill)
	w.prompt("call 0")
	page := waitAny(t, w, 120*time.Second, "OUT ", "more than its disk quota of 50 MiB")
	stopped := strings.Contains(page, "more than its disk quota")
	e.sup.Stop(id)
	time.Sleep(2 * time.Second)
	var left []string
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil {
			left = append(left, fmt.Sprintf("%s (%d MiB)", p, fi.Size()>>20))
		}
	}
	t.Logf("stopped by the quota: %v; left after the run: %v", stopped, left)
	if !stopped && len(left) > 0 {
		t.Errorf("a run under a 50 MiB quota left files outside its project, unseen by the quota, after it ended: %v", left)
	}
	e.healthy()
}

// TestRedteamQuotaOvershootByFallocate: the quota is measured, not
// enforced by the file system, so between two measurements a run may take
// what it can allocate. fallocate took 2.9 GB in well under a second (it
// writes nothing), in files each under the per-file cap. Under a 50 MiB quota, what the project holds at any
// moment must stay near the quota (the quota tests allow 300 MiB): on a
// data dir beside PostgreSQL the rest of the disk is the database's. The
// guard now refuses fallocate to runs (EOPNOTSUPP, guard/fallocate.go), so
// a run takes disk only by writing, at the speed of writes, which the
// watcher sees within a period (and the file system's reserve bounds:
// quota.TestWatcherKeepsTheFileSystemsReserve).
func TestRedteamQuotaOvershootByFallocate(t *testing.T) {
	for _, isolation := range []string{"uid", "bwrap"} {
		t.Run(isolation, func(t *testing.T) { quotaOvershoot(t, isolation) })
	}
}

func quotaOvershoot(t *testing.T, isolation string) {
	// Each file stays under the per-file cap (RLIMIT_FSIZE, here the
	// quota): sixty of 49 MiB.
	fill := `for i in $(seq 60); do fallocate -l 49M big$i.bin || echo FAILED; done; echo ALLOCATED; sleep 15; echo END`
	e, w, _ := quotaEnvIn(t, isolation, store.RunLimits{Disk: 50 << 20}, fill)
	w.prompt("call 0")
	var most int64
	dir := projectDir(e.dataDir, e.project.ID)
	for deadline := time.Now().Add(40 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if used, err := quota.Usage(dir); err == nil {
			most = max(most, used)
		}
		if most > 2<<30 {
			break
		}
	}
	out, _ := e.lastToolResult(2)
	t.Logf("the project held at most %s under a 50 MiB quota; fallocate refused: %v", quota.Bytes(most), strings.Contains(out, "FAILED"))
	if most > 300<<20 {
		t.Errorf("a run held %s at once under a 50 MiB quota", quota.Bytes(most))
	}
	files, _ := filepath.Glob(filepath.Join(WorkspaceDir(e.dataDir, e.project), "big*.bin"))
	for _, f := range files {
		os.Remove(f)
	}
	e.healthy()
}
