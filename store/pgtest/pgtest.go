// Package pgtest gives tests a real, fresh PostgreSQL database each, cloned from a template
// that has Parley's migrations applied once per test process.
//
// The server is PARLEY_TEST_DATABASE_URL when set (a superuser URL), else one throwaway
// cluster per test process, started on first use with store.StartEmbedded (as the postgres
// OS user when running as root) and tuned for speed over durability. A package using New
// calls Main from its TestMain so the cluster is stopped and removed when its tests end:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"parley/store"
)

// server is this test process's PostgreSQL server. It is package state because a cluster
// outlives any one test; Main tears it down.
var server struct {
	once     sync.Once
	err      error
	admin    *pgxpool.Pool // connected to the server's maintenance database
	baseURL  *url.URL      // any database on the server; New swaps the path
	template string
	external bool
	stop     func() error // stops the throwaway cluster; nil for an external server
	dir      string       // the throwaway cluster's directory

	mu      sync.Mutex // serialises Stop and Start
	stopped bool       // Stop has stopped the cluster and Start has not restarted it
}

// New returns the URL of a new database for t, with every migration applied. The database
// is dropped when t ends if the server is external; a throwaway cluster just goes away.
func New(t testing.TB) string {
	t.Helper()
	server.once.Do(func() { server.err = setup(context.Background()) })
	if server.err != nil {
		t.Fatalf("pgtest: %v", server.err)
	}
	name := "test_" + randomHex()
	ctx := t.Context()
	_, err := server.admin.Exec(ctx, fmt.Sprintf(`CREATE DATABASE %s TEMPLATE %s`,
		pgx.Identifier{name}.Sanitize(), pgx.Identifier{server.template}.Sanitize()))
	if err != nil {
		t.Fatalf("pgtest: create database %s: %v", name, err)
	}
	if server.external {
		t.Cleanup(func() {
			// FORCE ends connections a test left open (PostgreSQL 13+).
			_, err := server.admin.Exec(context.Background(),
				`DROP DATABASE IF EXISTS `+pgx.Identifier{name}.Sanitize()+` WITH (FORCE)`)
			if err != nil {
				t.Errorf("pgtest: drop database %s: %v", name, err)
			}
		})
	}
	return databaseURL(name)
}

// Main runs the tests and then stops the throwaway cluster, if one was started, and exits.
func Main(m *testing.M) {
	code := m.Run()
	if err := teardown(); err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// Stop stops this test process's throwaway cluster with a fast shutdown (what
// `pg_ctl stop -m fast` does: clients are disconnected, open transactions
// aborted), so every database of New is unavailable until Start. Fault tests
// use it to take the database away mid-run; they must not run in parallel
// with other tests of their package. It skips t on an external server,
// which a test must not stop.
func Stop(t testing.TB) {
	t.Helper()
	server.mu.Lock()
	defer server.mu.Unlock()
	if server.external || server.stop == nil {
		t.Skip("pgtest: the database is an external server (PARLEY_TEST_DATABASE_URL); it cannot be stopped")
	}
	if server.stopped {
		return
	}
	if err := server.stop(); err != nil {
		t.Fatalf("pgtest: stop the cluster: %v", err)
	}
	server.stopped = true
}

// Start restarts the cluster Stop stopped, on the same socket, so every URL
// of New works again. Stop then Start from a Cleanup keeps the cluster up
// for the tests that follow.
func Start(t testing.TB) {
	t.Helper()
	server.mu.Lock()
	defer server.mu.Unlock()
	if !server.stopped {
		return
	}
	u, stop, err := store.StartEmbedded(context.Background(), server.dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("pgtest: restart the cluster: %v", err)
	}
	server.stop, server.stopped = stop, false
	// The admin pool's idle connections died with the old server; the next
	// New would write to one ("broken pipe").
	server.admin.Reset()
	if got, _ := url.Parse(u); got == nil || got.Query().Get("host") != server.baseURL.Query().Get("host") {
		t.Fatalf("pgtest: the restarted cluster listens at %s, not at %s", u, server.baseURL)
	}
}

// setup connects to (or starts) the server and creates the migrated template database.
func setup(ctx context.Context) error {
	adminURL := os.Getenv("PARLEY_TEST_DATABASE_URL")
	if adminURL != "" {
		server.external = true
	} else {
		dir, err := os.MkdirTemp("", "parley-pgtest-")
		if err != nil {
			return err
		}
		server.dir = dir
		adminURL, server.stop, err = store.StartEmbedded(ctx, dir, slog.New(slog.DiscardHandler))
		if err != nil {
			return err
		}
	}
	u, err := url.Parse(adminURL)
	if err != nil {
		return fmt.Errorf("parse server url: %w", err)
	}
	server.baseURL = u
	server.admin, err = pgxpool.New(ctx, databaseURL("postgres"))
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	if !server.external {
		// A throwaway cluster needs no durability; these settings reload without a restart.
		for _, set := range []string{"fsync = off", "synchronous_commit = off", "full_page_writes = off"} {
			if _, err := server.admin.Exec(ctx, `ALTER SYSTEM SET `+set); err != nil {
				return fmt.Errorf("tune cluster: %w", err)
			}
		}
		if _, err := server.admin.Exec(ctx, `SELECT pg_reload_conf()`); err != nil {
			return fmt.Errorf("tune cluster: %w", err)
		}
	}
	// The template's name is unique so test processes sharing an external server don't collide.
	server.template = "parley_template_" + randomHex()
	if _, err := server.admin.Exec(ctx, `CREATE DATABASE `+pgx.Identifier{server.template}.Sanitize()); err != nil {
		return fmt.Errorf("create template: %w", err)
	}
	if err := store.Migrate(databaseURL(server.template)); err != nil {
		return fmt.Errorf("migrate template: %w", err)
	}
	return nil
}

// teardown drops the template from an external server, or stops and removes the cluster.
func teardown() error {
	if server.admin == nil && server.stop == nil {
		return nil
	}
	var errs []error
	if server.admin != nil {
		if server.external {
			_, err := server.admin.Exec(context.Background(),
				`DROP DATABASE IF EXISTS `+pgx.Identifier{server.template}.Sanitize()+` WITH (FORCE)`)
			errs = append(errs, err)
		}
		server.admin.Close()
	}
	if server.stop != nil && !server.stopped {
		errs = append(errs, server.stop())
	}
	if server.dir != "" {
		errs = append(errs, os.RemoveAll(server.dir))
	}
	return errors.Join(errs...)
}

// databaseURL is the URL of database name on the test server.
func databaseURL(name string) string {
	u := *server.baseURL
	u.Path = "/" + name
	u.RawPath = ""
	return u.String()
}

func randomHex() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}
