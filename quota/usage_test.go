package quota

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// write makes a file of n bytes of data (not sparse) at path.
func write(t *testing.T, path string, n int) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, make([]byte, n), 0o644); err != nil {
		t.Fatal(err)
	}
}

func usageOf(t *testing.T, dirs ...string) int64 {
	t.Helper()
	n, err := Usage(dirs...)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestUsageCountsWhatTheTreeHolds: files count their blocks, a file with
// two links once, a missing directory nothing, and an empty file or
// directory at least 4 KiB.
func TestUsageCountsWhatTheTreeHolds(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a", "big"), 3<<20)
	if err := os.Link(filepath.Join(dir, "a", "big"), filepath.Join(dir, "big-again")); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		write(t, filepath.Join(dir, "empty", strings.Repeat("x", i+1)), 0)
	}
	got := usageOf(t, dir, filepath.Join(dir, "missing"))
	// 3 MiB, 100 empty files at 4 KiB, and the three directories.
	if want := int64(3<<20 + 100*minEntry + 3*minEntry); got < want || got > want+64<<10 {
		t.Errorf("usage %d, want about %d", got, want)
	}
	if got2 := usageOf(t, dir, filepath.Join(dir, "a")); got2 != got {
		t.Errorf("a tree listed twice counts %d, want %d (once)", got2, got)
	}
}

// TestUsageFollowsNoLink: a link to a big tree outside counts as the
// link, at the top and inside.
func TestUsageFollowsNoLink(t *testing.T) {
	outside, dir := t.TempDir(), t.TempDir()
	write(t, filepath.Join(outside, "big"), 8<<20)
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "big"), filepath.Join(dir, "file-link")); err != nil {
		t.Fatal(err)
	}
	if got := usageOf(t, dir); got > 1<<20 {
		t.Errorf("usage %d: a link was followed", got)
	}
	if got := usageOf(t, filepath.Join(dir, "link")); got > 1<<20 {
		t.Errorf("usage of a top that is a link %d: it was followed", got)
	}
}

// TestUsageSwapAttack: a directory swapped for a link to a big tree while
// the walk runs never has the big tree counted.
func TestUsageSwapAttack(t *testing.T) {
	outside, dir := t.TempDir(), t.TempDir()
	write(t, filepath.Join(outside, "big"), 16<<20)
	sub := filepath.Join(dir, "sub")
	for i := range 50 {
		write(t, filepath.Join(sub, "d", strings.Repeat("f", i+1)), 0)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			_ = os.Rename(sub, sub+".real")
			_ = os.Symlink(outside, sub)
			_ = os.Remove(sub)
			_ = os.Rename(sub+".real", sub)
		}
	}()
	for range 300 {
		if got := usageOf(t, dir); got > 8<<20 {
			t.Fatalf("usage %d: the swapped link's target was counted", got)
		}
	}
	cancel()
	<-done
}

// TestUsageStaysOnItsFileSystem: a file system mounted inside the tree
// is not counted.
func TestUsageStaysOnItsFileSystem(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting needs root")
	}
	dir := t.TempDir()
	mnt := filepath.Join(dir, "mnt")
	os.Mkdir(mnt, 0o755)
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=64m"); err != nil {
		t.Skipf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(mnt, syscall.MNT_DETACH) })
	write(t, filepath.Join(mnt, "big"), 16<<20)
	if got := usageOf(t, dir); got > 1<<20 {
		t.Errorf("usage %d: the mounted file system was counted", got)
	}
}

// TestUsageTooDeep: a tree nested deeper than it measures is an error
// the quota counts as over, not a way around it.
func TestUsageTooDeep(t *testing.T) {
	dir := t.TempDir()
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	fd := int(d.Fd())
	for range maxDepth + 2 {
		if err := syscall.Mkdirat(fd, "d", 0o755); err != nil {
			t.Fatal(err)
		}
		nfd, err := syscall.Openat(fd, "d", syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if fd != int(d.Fd()) {
			syscall.Close(fd)
		}
		fd = nfd
	}
	syscall.Close(fd)
	d.Close()
	_, err = Usage(dir)
	if !errors.Is(err, ErrTooDeep) {
		t.Fatalf("Usage of a tree %d deep: %v, want ErrTooDeep", maxDepth+2, err)
	}
	if st := (Status{Quota: 1 << 30, Err: err}); !st.Over() || !strings.Contains(st.Sentence(), "too deep") {
		t.Errorf("a tree too deep: over %v, %q", st.Over(), st.Sentence())
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
}

// TestWatcherStopsAProjectOverItsQuota: a live project is measured every
// period and stopped once over; Check lets it go once files are removed.
// TestWatcherCatchesAFastWriterNearItsQuota: a run writing 10 MiB a
// second into a project of 20 MiB is stopped near its quota (measured
// every second; with a 10 s period it got to 100 MiB).
// TestPeriodKeepsMeasuringToATenthOfACPU: a tree that takes 100 ms to
// walk, with 5 projects live, is measured every 5 s, not every second.
// TestUsageUnreadableIsOver: a directory the measuring uid may not open
// (chmod 000 by a run sharing that uid) makes the project over its
// quota, not unmeasured. The walk runs as nobody in a child process.
func TestUsageUnreadableIsOver(t *testing.T) {
	if dir := os.Getenv("QUOTA_TEST_WALK"); dir != "" {
		_, err := Usage(filepath.Join(dir, "tree"))
		st := Status{Quota: 1 << 30, Err: err}
		fmt.Printf("over=%v %v\n", st.Over(), err)
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to walk as another uid")
	}
	dir, err := os.MkdirTemp("", "quota-unreadable-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	tree := filepath.Join(dir, "tree")
	write(t, filepath.Join(tree, "hidden", "big"), 1<<20)
	for _, d := range []string{tree, filepath.Join(tree, "hidden"), filepath.Join(tree, "hidden", "big")} {
		os.Chown(d, 65534, 65534)
	}
	os.Chmod(dir, 0o755)
	os.Chmod(filepath.Join(tree, "hidden"), 0)
	// The test binary's own dir is root's alone: nobody runs a copy.
	bin := filepath.Join(dir, "quota.test")
	b, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestUsageUnreadableIsOver$")
	cmd.Env = append(os.Environ(), "QUOTA_TEST_WALK="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the walk as nobody: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "over=true") || !strings.Contains(string(out), "cannot be read") {
		t.Errorf("a directory chmod 000: %s; want over the quota", out)
	}
}
