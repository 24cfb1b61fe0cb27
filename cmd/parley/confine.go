package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"parley/cgroup"
	"parley/runner"
)

// runLimits are what a project's runs may hold (PARLEY_RUN_TASKS,
// PARLEY_RUN_MEMORY, PARLEY_RUN_CPU_WEIGHT, PARLEY_PROJECT_DISK), each
// project's unless an admin sets its own, and what one run's file may
// take (PARLEY_RUN_MAX_FILE), server-wide.
type runLimits struct {
	Cgroup      cgroup.Limits
	MaxFile     int64 // bytes; 0 = no cap (PARLEY_RUN_MAX_FILE=off)
	ProjectDisk int64 // bytes; 0 = no quota (PARLEY_PROJECT_DISK=off)
	// DiskReserve is what the data dir's file system keeps free
	// (PARLEY_DISK_RESERVE; quota.Config.Reserve): 0 = 5% or 2 GiB, -1 = none.
	DiskReserve int64
}

// defaultProjectDisk is a project's disk quota: its workspace, worktrees,
// home and CLI config together (package quota measures them).
const defaultProjectDisk = 10 << 30

// defaultMaxFile caps a run's largest file: a run cannot fill the data
// dir's file system, which holds the private PostgreSQL's data, with one
// file; a repository's pack or a build's output stays well under it.
const defaultMaxFile = 1 << 30

// runOOMScore is every run's oom_score_adj, and parleyOOMScore Parley's
// own when it runs as root: the kernel adds adj/1000 of the machine's
// memory to a process's size when it picks whom to kill, so a run is
// picked before Parley (and Parley, unlike a run, can lower its own only
// as root).
const (
	runOOMScore    = 800
	parleyOOMScore = -500
)

// parseRunLimits reads the PARLEY_RUN_* limits.
func parseRunLimits(getenv func(string) string) (runLimits, error) {
	l := runLimits{Cgroup: cgroup.Defaults, MaxFile: defaultMaxFile, ProjectDisk: defaultProjectDisk}
	if v := getenv("PARLEY_RUN_TASKS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return l, fmt.Errorf("PARLEY_RUN_TASKS %q: want a number of processes and threads per run, 0 for no limit", v)
		}
		l.Cgroup.Tasks = n
	}
	if v := getenv("PARLEY_RUN_MEMORY"); v != "" {
		n, err := parseSize(v)
		if err != nil {
			return l, fmt.Errorf("PARLEY_RUN_MEMORY %q: want a size per run such as 2G or 512M, 0 for no limit", v)
		}
		l.Cgroup.Memory = n
	}
	if v := getenv("PARLEY_RUN_CPU_WEIGHT"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 10000 {
			return l, fmt.Errorf("PARLEY_RUN_CPU_WEIGHT %q: want 1-10000 (100 weighs as much as Parley)", v)
		}
		l.Cgroup.CPUWeight = n
	}
	if v := getenv("PARLEY_RUN_MAX_FILE"); v == "off" {
		l.MaxFile = 0
	} else if v != "" {
		n, err := parseSize(v)
		if err != nil || n == 0 {
			return l, fmt.Errorf("PARLEY_RUN_MAX_FILE %q: want the largest file a run may write, such as 1G, or off", v)
		}
		l.MaxFile = n
	}
	if v := getenv("PARLEY_PROJECT_DISK"); v == "off" || v == "0" {
		l.ProjectDisk = 0
	} else if v != "" {
		n, err := parseSize(v)
		if err != nil || n < 1<<20 {
			return l, fmt.Errorf("PARLEY_PROJECT_DISK %q: want the disk a project's files may take, such as 10G (at least 1M), or off", v)
		}
		l.ProjectDisk = n
	}
	if v := getenv("PARLEY_DISK_RESERVE"); v == "off" {
		l.DiskReserve = -1
	} else if v != "" {
		n, err := parseSize(v)
		if err != nil {
			return l, fmt.Errorf("PARLEY_DISK_RESERVE %q: want the free disk to keep, such as 2G, 0 for the default, or off", v)
		}
		l.DiskReserve = n
	}
	return l, nil
}

// parseSize reads bytes with an optional binary suffix: 1048576, 512K,
// 512M, 2G, 2GiB, 1T.
func parseSize(v string) (int64, error) {
	s := strings.TrimSuffix(strings.TrimSuffix(strings.ToUpper(strings.TrimSpace(v)), "B"), "I")
	shift := 0
	if i := strings.IndexAny(s, "KMGT"); i >= 0 && i == len(s)-1 {
		shift = 10 * (strings.IndexByte("KMGT", s[i]) + 1)
		s = s[:i]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > (1<<62)>>shift {
		return 0, errors.New("not a size")
	}
	return n << shift, nil
}

// confineRuns gives rc what confines runs beyond the sandbox: a cgroup
// each with limits, after killing what runs of a Parley that died left
// (cgroup.Manager.Sweep); a pid namespace each where runs get a uid and
// this process may make one; their OOM score and file size cap. Where a
// part cannot be had it says so at every start. The returned func removes
// this process's cgroups; call it once the runs have ended.
func confineRuns(c config, rc *runner.Config, log *slog.Logger) func() {
	rc.OOMScore, rc.MaxFile = runOOMScore, c.RunLimits.MaxFile
	if os.Geteuid() == 0 {
		if err := os.WriteFile("/proc/self/oom_score_adj", []byte(strconv.Itoa(parleyOOMScore)), 0); err != nil {
			// Root without CAP_SYS_RESOURCE (a container): the runs'
			// own score (runOOMScore) still puts them first.
			log.Info("Parley's own OOM score stays as it is", "err", err)
		}
	}
	if rc.GuardExe != "" && isUIDSandbox(rc.Sandbox) && os.Geteuid() == 0 {
		if err := runner.ProbePIDNamespace(rc.GuardExe); err != nil {
			log.Warn("runs get no pid namespace of their own (Parley needs CAP_SYS_ADMIN): they see every process of the machine in /proc", "err", err)
		} else {
			rc.PIDNamespace = true
		}
	}
	m, err := cgroup.Open(c.RunLimits.Cgroup)
	if err != nil {
		log.Warn("runs get no cgroup: no limit on their tasks and memory, and a process a run starts in a session of its own (setsid) may outlive it; run Parley as root, or give its user a delegated cgroup v2 subtree", "err", err)
		return func() {}
	}
	if n, err := m.Sweep(); err != nil {
		log.Error("kill what runs of an earlier Parley left", "err", err)
	} else if n > 0 {
		log.Info("killed what runs of an earlier Parley left", "cgroups", n)
	}
	rc.Cgroups = m
	log.Info("each run gets a cgroup inside its project's, which holds the project's limits", "version", m.Version(), "tasks", c.RunLimits.Cgroup.Tasks,
		"memory", c.RunLimits.Cgroup.Memory, "cpu_weight", c.RunLimits.Cgroup.CPUWeight, "project_disk", c.RunLimits.ProjectDisk, "pid_namespace", rc.PIDNamespace)
	return func() {
		if err := m.Close(); err != nil {
			log.Warn("remove the runs' cgroups", "err", err)
		}
	}
}

// checkDiskCap refuses a start where runs may write files of any size
// (PARLEY_RUN_MAX_FILE=off), or as many files as they like
// (PARLEY_PROJECT_DISK=off), onto the file system of PostgreSQL's data:
// a run could fill it, and the database would stop taking writes.
func checkDiskCap(ctx context.Context, c config) error {
	if c.RunLimits.MaxFile > 0 && c.RunLimits.ProjectDisk > 0 {
		return nil
	}
	pg := postgresDataDir(ctx, c)
	if pg == "" || !sameFileSystem(c.DataDir, pg) {
		return nil
	}
	if c.RunLimits.MaxFile > 0 {
		return fmt.Errorf("PARLEY_PROJECT_DISK is off, but the data directory %s is on the file system of PostgreSQL's data (%s), which a project's runs could fill: set PARLEY_PROJECT_DISK to a size (10G by default), or give the data directory a file system of its own", c.DataDir, pg)
	}
	return fmt.Errorf("PARLEY_RUN_MAX_FILE is off, but the data directory %s is on the file system of PostgreSQL's data (%s), which a run could fill: set PARLEY_RUN_MAX_FILE to a size (1G by default), or give the data directory a file system of its own", c.DataDir, pg)
}

// postgresDataDir is where the database keeps its data, if it can be
// known: the private PostgreSQL's under the data dir, or a local server's
// data_directory (a role that may read it); "" otherwise.
func postgresDataDir(ctx context.Context, c config) string {
	if c.DatabaseURL == "" {
		return filepath.Join(c.DataDir, "postgres")
	}
	u, err := url.Parse(c.DatabaseURL)
	if err != nil || !localHost(u.Hostname(), u.Query().Get("host")) {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.DatabaseURL)
	if err != nil {
		return ""
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var dir string
	if conn.QueryRow(ctx, "SHOW data_directory").Scan(&dir) != nil {
		return ""
	}
	return dir
}

// localHost says whether a URL's host (or its host parameter, a socket
// directory) is this machine.
func localHost(host, param string) bool {
	switch {
	case strings.HasPrefix(param, "/"), host == "" && param == "":
		return true
	default:
		return host == "localhost" || host == "127.0.0.1" || host == "::1"
	}
}

// sameFileSystem says whether a and b lie on one file system (device);
// a path not made yet lies where its nearest existing parent does.
func sameFileSystem(a, b string) bool {
	da, okA := device(a)
	db, okB := device(b)
	return okA && okB && da == db
}

// device is the device of p, or of its nearest existing parent.
func device(p string) (uint64, bool) {
	for {
		var st syscall.Stat_t
		if syscall.Stat(p, &st) == nil {
			return uint64(st.Dev), true
		}
		if parent := filepath.Dir(p); parent != p {
			p = parent
			continue
		}
		return 0, false
	}
}
