package guard

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// sharedTmp are the directories every user of the machine may write:
// with per-project uids, runs of all projects would meet there.
var sharedTmp = []string{"/tmp", "/var/tmp", "/dev/shm", "/run/lock"}

// privateTmp binds the run's own temporary directory (its TMPDIR, under
// its project's home) over the machine's shared ones, in the run's mount
// namespace: what a run writes to /tmp then lies in its project's
// directory, which the disk quota measures, and no run meets another
// project's files there (the CLI keeps /tmp/claude-<uid> and
// /tmp/cc-socks-<uid>, whose names another project's run can guess).
// The directory is the uid's to change, so it is opened without following
// a link (from its parent, the project's home, which the uid cannot move)
// and must be a directory the uid owns; it is bound through its
// descriptor. No TMPDIR: nothing to bind. A shared directory that holds
// the run's own directories (a data dir under /tmp) is left as it is.
func privateTmp(uid int) error {
	dir := os.Getenv("TMPDIR")
	if dir == "" || uid < 0 {
		return nil
	}
	parent, err := unix.Open(filepath.Dir(filepath.Clean(dir)), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open the run's home: %w", err)
	}
	defer unix.Close(parent)
	fd, err := unix.Openat(parent, filepath.Base(dir), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open the run's temporary directory %s (not a directory, or a link): %w", dir, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || int(st.Uid) != uid {
		return fmt.Errorf("the run's temporary directory %s is not the run's own (uid %d): %v", dir, st.Uid, err)
	}
	src := "/proc/self/fd/" + strconv.Itoa(fd)
	cwd, _ := os.Getwd()
	for _, target := range sharedTmp {
		if fi, err := os.Lstat(target); err != nil || !fi.IsDir() || under(dir, target) || under(cwd, target) {
			continue // a data dir under /tmp (tests): hiding it would hide the run's own files
		}
		if err := syscall.Mount(src, target, "", syscall.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind the run's temporary directory over %s: %w", target, err)
		}
	}
	return nil
}

// under says whether path p lies in dir (or is dir).
func under(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return p != "" && err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}
