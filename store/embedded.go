package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

const (
	// socketName is the file PostgreSQL creates in its socket directory for the default port.
	socketName = ".s.PGSQL.5432"
	// maxSocketPath is sizeof(sockaddr_un.sun_path) minus the terminating NUL on Linux.
	maxSocketPath = 107
	// pgStartWait bounds how long a starting cluster may take to accept connections
	// (crash recovery after an unclean stop included).
	pgStartWait = 60 * time.Second
	// pgStopWait bounds a fast shutdown before escalating to an immediate one.
	pgStopWait = 30 * time.Second
)

// StartEmbedded runs a private PostgreSQL cluster under dir from the system's PostgreSQL
// binaries, the default when no DATABASE_URL is given. The cluster is created on first use,
// listens only on a unix socket with trust auth, and has a database named parley.
// It returns that database's URL and a stop function that shuts the cluster down (fast
// shutdown) and waits for it; stop is safe to call more than once.
//
// ctx bounds start-up only: the cluster outlives it so a server can drain its last writes
// during shutdown, and must be stopped with stop.
//
// PostgreSQL refuses to run as root, so when the server runs as root the cluster runs as
// the OS user postgres, which must exist and own dir.
func StartEmbedded(ctx context.Context, dir string, log *slog.Logger) (string, func() error, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", nil, fmt.Errorf("embedded postgres: %w", err)
	}
	bindir, err := postgresBindir()
	if err != nil {
		return "", nil, err
	}
	cred, err := clusterCredential()
	if err != nil {
		return "", nil, err
	}
	if err := prepareDir(dir, cred); err != nil {
		return "", nil, err
	}
	sockdir, cleanSockdir, err := socketDir(dir, cred)
	if err != nil {
		return "", nil, err
	}
	datadir := filepath.Join(dir, "data")
	if err := initCluster(ctx, bindir, datadir, cred, log); err != nil {
		cleanSockdir()
		return "", nil, err
	}
	removeStalePidFile(datadir, log)
	pg, err := startPostgres(ctx, bindir, datadir, sockdir, cred, log)
	if err != nil {
		cleanSockdir()
		return "", nil, err
	}
	stop := sync.OnceValue(func() error {
		defer cleanSockdir()
		return pg.stop()
	})
	if err := createDatabase(ctx, socketURL(sockdir, "postgres"), "parley"); err != nil {
		return "", nil, errors.Join(err, stop())
	}
	log.Info("embedded postgres ready", "dir", dir, "socket_dir", sockdir, "pid", pg.cmd.Process.Pid)
	return socketURL(sockdir, "parley"), stop, nil
}

// socketURL is the URL of database db on the cluster listening in sockdir.
func socketURL(sockdir, db string) string {
	return "postgres://postgres@/" + db + "?host=" + url.QueryEscape(sockdir) + "&sslmode=disable"
}

// postgresBindir finds the directory holding initdb and postgres: `pg_config --bindir`
// first, else the newest /usr/lib/postgresql/*/bin (Debian's layout).
func postgresBindir() (string, error) {
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		dir := strings.TrimSpace(string(out))
		if _, err := os.Stat(filepath.Join(dir, "initdb")); err == nil {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return pgMajor(dirs[i]) > pgMajor(dirs[j]) })
	for _, dir := range dirs {
		if _, err := os.Stat(filepath.Join(dir, "initdb")); err == nil {
			return dir, nil
		}
	}
	return "", errors.New("embedded postgres: no PostgreSQL server binaries found (pg_config --bindir, /usr/lib/postgresql/*/bin); install PostgreSQL or set DATABASE_URL")
}

// pgMajor is the version number in /usr/lib/postgresql/<major>/bin, 0 if there is none.
func pgMajor(bindir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(bindir)))
	return n
}

// clusterCredential is who the cluster runs as: nil for the current user, or the postgres
// OS user when running as root, which PostgreSQL refuses.
func clusterCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("embedded postgres: running as root, and PostgreSQL will not run as root, but there is no postgres OS user to run it as (%v); create one or set DATABASE_URL", err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// prepareDir creates dir and, when the cluster runs as another user, hands it to that user
// and checks the user can reach it.
func prepareDir(dir string, cred *syscall.Credential) error {
	// Parents made here must be enterable by the postgres user; dir itself stays private.
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("embedded postgres: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("embedded postgres: %w", err)
	}
	if cred == nil {
		return nil
	}
	if err := chownTree(dir, cred); err != nil {
		return fmt.Errorf("embedded postgres: give %s to the postgres user: %w", dir, err)
	}
	return checkSearchable(filepath.Dir(dir), cred)
}

// chownTree gives dir and everything under it to cred's user, unless dir is already theirs.
func chownTree(dir string, cred *syscall.Credential) error {
	if st, err := os.Stat(dir); err == nil {
		if sys, ok := st.Sys().(*syscall.Stat_t); ok && sys.Uid == cred.Uid {
			return nil
		}
	}
	return filepath.WalkDir(dir, func(path string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, int(cred.Uid), int(cred.Gid))
	})
}

// checkSearchable reports a clear error when cred's user cannot traverse dir or one of its
// parents (a data dir under /root, say). It reads mode bits only, ignoring ACLs and
// supplementary groups.
func checkSearchable(dir string, cred *syscall.Credential) error {
	for d := dir; ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("embedded postgres: %w", err)
		}
		sys, _ := st.Sys().(*syscall.Stat_t)
		mode := st.Mode().Perm()
		ok := mode&0o001 != 0 ||
			(sys != nil && sys.Uid == cred.Uid && mode&0o100 != 0) ||
			(sys != nil && sys.Gid == cred.Gid && mode&0o010 != 0)
		if !ok {
			return fmt.Errorf("embedded postgres: the postgres OS user cannot enter %s (mode %v); choose a data directory it can reach, or set DATABASE_URL", d, mode)
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// socketDir picks the directory for the cluster's unix socket: dir/run, or, when that path
// would exceed the kernel's limit for socket paths (sun_path, 108 bytes with the NUL), a
// short private directory under os.TempDir() that the returned clean function removes.
func socketDir(dir string, cred *syscall.Credential) (string, func(), error) {
	sockdir := filepath.Join(dir, "run")
	clean := func() {}
	if len(filepath.Join(sockdir, socketName)) > maxSocketPath {
		tmp, err := os.MkdirTemp("", "parley-pg-")
		if err != nil {
			return "", nil, fmt.Errorf("embedded postgres: socket dir: %w", err)
		}
		sockdir, clean = tmp, func() { os.RemoveAll(tmp) }
		if len(filepath.Join(sockdir, socketName)) > maxSocketPath {
			clean()
			return "", nil, fmt.Errorf("embedded postgres: socket path under %s is too long for a unix socket; set TMPDIR shorter or DATABASE_URL", os.TempDir())
		}
	} else if err := os.MkdirAll(sockdir, 0o700); err != nil {
		return "", nil, fmt.Errorf("embedded postgres: socket dir: %w", err)
	}
	if cred != nil {
		if err := os.Chown(sockdir, int(cred.Uid), int(cred.Gid)); err != nil {
			clean()
			return "", nil, fmt.Errorf("embedded postgres: socket dir: %w", err)
		}
	}
	return sockdir, clean, nil
}

// initCluster runs initdb into datadir unless a cluster is already there.
func initCluster(ctx context.Context, bindir, datadir string, cred *syscall.Credential, log *slog.Logger) error {
	if _, err := os.Stat(filepath.Join(datadir, "PG_VERSION")); err == nil {
		return nil
	}
	// A data dir without PG_VERSION is the remains of an interrupted initdb, which would
	// refuse a non-empty directory; it holds no data yet.
	if err := os.RemoveAll(datadir); err != nil {
		return fmt.Errorf("embedded postgres: remove incomplete cluster: %w", err)
	}
	log.Info("embedded postgres: creating cluster", "data_dir", datadir)
	cmd := exec.CommandContext(ctx, filepath.Join(bindir, "initdb"),
		"-D", datadir, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-instructions")
	cmd.Dir = filepath.Dir(datadir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("embedded postgres: initdb: %w: %s", err, tail(out))
	}
	return nil
}

// removeStalePidFile removes a postmaster.pid left by a crash whose PID now belongs to a
// process that is not postgres. postgres itself ignores a lock file whose PID is dead (or is
// its own or its parent's), but refuses to start when the PID was reused by another process,
// which is likely after a container restart.
func removeStalePidFile(datadir string, log *slog.Logger) {
	path := filepath.Join(datadir, "postmaster.pid")
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil || pid <= 0 {
		return
	}
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil || strings.TrimSpace(string(comm)) == "postgres" {
		return
	}
	log.Info("embedded postgres: removing stale lock file", "path", path, "pid", pid)
	os.Remove(path)
}

// createDatabase creates database name on the cluster at adminURL unless it exists.
func createDatabase(ctx context.Context, adminURL, name string) error {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return fmt.Errorf("embedded postgres: connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var exists bool
	err = conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists)
	if err == nil && !exists {
		_, err = conn.Exec(ctx, `CREATE DATABASE `+pgx.Identifier{name}.Sanitize())
	}
	if err != nil {
		return fmt.Errorf("embedded postgres: create database %s: %w", name, err)
	}
	return nil
}

// tail is the last few hundred bytes of a tool's output, for an error message.
func tail(out []byte) string {
	const n = 800
	s := strings.TrimSpace(string(out))
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return s
}

// RunningEmbeddedURL returns the URL of the parley database of a private cluster under dir
// that another process (a running `parley serve`) has started, or "" when its socket is not
// there. Admin subcommands use it instead of starting the cluster a second time.
func RunningEmbeddedURL(dir string) string {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	sockdir := filepath.Join(dir, "run")
	if _, err := os.Stat(filepath.Join(sockdir, socketName)); err != nil {
		return ""
	}
	return socketURL(sockdir, "parley")
}
