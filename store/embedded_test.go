package store_test

import (
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"

	"parley/store"
)

// embeddedDir returns a directory for a cluster that the postgres OS user can reach when the
// test runs as root (t.TempDir's parents are mode 0700).
func embeddedDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "parley-embedded-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// startEmbedded starts a cluster in dir, checks it answers a query, and returns its URL and stop.
func startEmbedded(t *testing.T, dir string) (string, func() error) {
	t.Helper()
	url, stop, err := store.StartEmbedded(t.Context(), dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop() })
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	var db string
	if err := conn.QueryRow(t.Context(), `SELECT current_database()`).Scan(&db); err != nil || db != "parley" {
		t.Fatalf("current_database() = %q, %v; want parley", db, err)
	}
	return url, stop
}

func TestStartEmbeddedRestart(t *testing.T) {
	dir := filepath.Join(embeddedDir(t), "postgres")
	url, stop := startEmbedded(t, dir)
	if err := store.Migrate(url); err != nil {
		t.Fatal(err)
	}
	s, err := store.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.EnsureDefaultProject(t.Context(), "default", "/ws")
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if err := stop(); err != nil {
		t.Fatalf("second stop: %v", err)
	}

	url, _ = startEmbedded(t, dir)
	if err := store.Migrate(url); err != nil {
		t.Fatalf("migrate again: %v", err)
	}
	s, err = store.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, err := s.GetProject(t.Context(), p.ID); err != nil || got.Name != "default" {
		t.Errorf("after restart GetProject = %+v, %v; want the project made before", got, err)
	}
}

func TestStartEmbeddedAfterCrash(t *testing.T) {
	dir := embeddedDir(t)
	_, stop := startEmbedded(t, dir)
	pid := postmasterPID(t, dir)
	// SIGKILL leaves postmaster.pid behind, as a crash of the machine would.
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	stop()
	if _, err := os.Stat(filepath.Join(dir, "data", "postmaster.pid")); err != nil {
		t.Fatalf("want a stale postmaster.pid after SIGKILL: %v", err)
	}
	startEmbedded(t, dir)
}

func TestStartEmbeddedLongPath(t *testing.T) {
	dir := filepath.Join(embeddedDir(t), strings.Repeat("d", 100))
	url, _ := startEmbedded(t, dir)
	if strings.Contains(url, strings.Repeat("d", 100)) {
		t.Errorf("url %s puts the socket under the long dir, want a short temp dir", url)
	}
}

// postmasterPID reads the PID of the cluster in dir from its lock file.
func postmasterPID(t *testing.T, dir string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "data", "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(first)
	if err != nil {
		t.Fatal(err)
	}
	return pid
}
