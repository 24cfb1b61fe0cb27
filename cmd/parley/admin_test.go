package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"parley/store"
	"parley/store/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// cli runs parley's run like main does, against one database and data dir.
type cli struct {
	t           *testing.T
	dbURL, data string
}

func newCLI(t *testing.T) *cli { return &cli{t: t, dbURL: pgtest.New(t), data: t.TempDir()} }

func (c *cli) getenv(k string) string {
	switch k {
	case "DATABASE_URL":
		return c.dbURL
	case "PARLEY_DATA_DIR":
		return c.data
	}
	return ""
}

// run runs the command with stdin; it returns stdout and the error.
func (c *cli) run(stdin string, args ...string) (string, error) {
	c.t.Helper()
	var out, errOut bytes.Buffer
	err := run(c.t.Context(), args, c.getenv, io.NopCloser(strings.NewReader(stdin)), &out, &errOut)
	return out.String() + errOut.String(), err
}

func (c *cli) mustRun(stdin string, args ...string) string {
	c.t.Helper()
	out, err := c.run(stdin, args...)
	if err != nil {
		c.t.Fatalf("parley %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func (c *cli) store() *store.Store {
	c.t.Helper()
	st, err := store.Open(c.t.Context(), c.dbURL)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(st.Close)
	return st
}

func TestUserCommands(t *testing.T) {
	c := newCLI(t)
	ctx := t.Context()
	if out := c.mustRun("", "user", "--help"); !strings.Contains(out, "read from standard input") {
		t.Errorf("user --help does not say where the password comes from:\n%s", out)
	}
	if out := c.mustRun("first password\n", "user", "add", "Boss@Example.com", "--admin", "--name", "The Boss"); !strings.Contains(out, "created admin Boss@Example.com") {
		t.Errorf("user add: %s", out)
	}
	c.mustRun("member password", "user", "add", "--name", "Mo", "mo@example.com") // flags first, no newline
	if _, err := c.run("x\n", "user", "add", "short@example.com"); err == nil || !strings.Contains(err.Error(), "too short") {
		t.Errorf("a short password: %v", err)
	}
	if _, err := c.run("another password\n", "user", "add", "boss@example.com"); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("a duplicate email (any case): %v", err)
	}
	out := c.mustRun("", "user", "list")
	for _, want := range []string{"EMAIL", "Boss@Example.com", "The Boss", "yes", "mo@example.com", "Mo", "no"} {
		if !strings.Contains(out, want) {
			t.Errorf("user list lacks %q:\n%s", want, out)
		}
	}
	st := c.store()
	u, err := st.UserByEmail(ctx, "boss@example.com")
	if err != nil || !u.IsAdmin || u.Name != "The Boss" || !strings.HasPrefix(u.PasswordHash, "$2a$12$") {
		t.Fatalf("stored user %+v, %v; want an admin with a bcrypt hash", u, err)
	}
	// passwd changes the hash and ends the user's sign-ins.
	if err := st.CreateAuthSession(ctx, u.ID, []byte("token-hash"), "csrf", u.CreatedAt.AddDate(1, 0, 0), "", ""); err != nil {
		t.Fatal(err)
	}
	c.mustRun("a brand new password\n", "user", "passwd", "boss@example.com")
	if _, err := st.AuthSessionByToken(ctx, []byte("token-hash")); err == nil {
		t.Error("the sign-in survived a password change")
	}
	u2, _ := st.UserByEmail(ctx, "boss@example.com")
	if u2.PasswordHash == u.PasswordHash {
		t.Error("passwd did not change the hash")
	}
	if _, err := c.run("whatever pw\n", "user", "passwd", "nobody@example.com"); err == nil {
		t.Error("passwd of an unknown user succeeded")
	}
	// Running servers hear of the removal at once (their sockets and runs
	// check access).
	signals, ready := make(chan string, 4), make(chan struct{})
	lctx, stopListening := context.WithCancel(ctx)
	defer stopListening()
	go func() {
		_ = st.Listen(lctx, []string{store.SignalsChannel}, func() { close(ready) },
			func(_, payload string) { signals <- payload })
	}()
	<-ready
	c.mustRun("", "user", "remove", "mo@example.com")
	if _, err := st.UserByEmail(ctx, "mo@example.com"); err == nil {
		t.Error("the removed user is still there")
	}
	select {
	case p := <-signals:
		if !strings.Contains(p, `"kind":"access"`) {
			t.Errorf("user remove signalled %s, want an access change", p)
		}
	case <-time.After(10 * time.Second):
		t.Error("user remove did not tell running servers")
	}
	if _, err := c.run("", "user", "frobnicate", "x"); err == nil {
		t.Error("an unknown user command succeeded")
	}
}

func TestProjectAndSyncCommands(t *testing.T) {
	c := newCLI(t)
	ctx := t.Context()
	c.mustRun("owner password\n", "user", "add", "owner@example.com")
	out := c.mustRun("", "project", "add", "Web", "app", "--owner", "owner@example.com")
	if !strings.Contains(out, `created project 1 "Web app" owned by owner@example.com`) {
		t.Errorf("project add: %s", out)
	}
	if _, err := c.run("", "project", "add", "Orphan", "--owner", "nobody@example.com"); err == nil {
		t.Error("a project for an unknown owner was created")
	}
	if _, err := c.run("", "project", "add", "--owner", "owner@example.com"); err == nil {
		t.Error("a project without a name was created")
	}
	st := c.store()
	u, _ := st.UserByEmail(ctx, "owner@example.com")
	if role, err := st.MemberRole(ctx, 1, u.ID); err != nil || role != "owner" {
		t.Errorf("owner role = %q, %v", role, err)
	}
	ws := filepath.Join(c.data, "projects", "1", "workspace")
	if _, err := os.Stat(filepath.Join(ws, "CLAUDE.md")); err != nil {
		t.Errorf("project add made no workspace: %v", err)
	}
	if out := c.mustRun("", "project", "list"); !strings.Contains(out, "Web app") || !strings.Contains(out, ws) {
		t.Errorf("project list:\n%s", out)
	}
	// After an upgrade (here: settings changed behind the files' back and
	// the files removed), sync-workspaces writes them again.
	if err := st.UpdateProjectSettings(ctx, 1, store.ProjectSettings{PermissionMode: "plan", Instructions: "Be terse.", AskUserEnabled: true}, ""); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(ws)
	if out := c.mustRun("", "sync-workspaces"); !strings.Contains(out, "synced 1 projects") {
		t.Errorf("sync-workspaces: %s", out)
	}
	md, _ := os.ReadFile(filepath.Join(ws, "CLAUDE.md"))
	if !strings.Contains(string(md), "Be terse.") {
		t.Errorf("after sync: CLAUDE.md %q", md)
	}
}

// TestServeHintsFirstAdmin: with no account, serve's log says how to make one.
func TestServeHintsFirstAdmin(t *testing.T) {
	c := newCLI(t)
	st := c.store()
	var log bytes.Buffer
	cfg := config{DataDir: c.data, Addr: "127.0.0.1:8080"}
	if err := firstAdminHint(context.Background(), st, cfg, newLogger(&log, "info")); err != nil {
		t.Fatal(err)
	}
	if want := "parley user add you@example.com --admin --data-dir " + c.data; !strings.Contains(log.String(), want) {
		t.Errorf("log %q lacks %q", log.String(), want)
	}
	c.mustRun("admin password\n", "user", "add", "a@example.com", "--admin")
	log.Reset()
	firstAdminHint(context.Background(), st, cfg, newLogger(&log, "info"))
	if log.Len() != 0 {
		t.Errorf("hint logged with an account present: %s", log.String())
	}
}
