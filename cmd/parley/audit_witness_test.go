package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"parley/audit"
)

// TestAuditVerifyWitness: rows appended while the data directory's
// witness is kept (as `parley serve` keeps it), then the newest two
// deleted in Postgres: `parley audit verify` reads the witness and says
// how many rows went; before the witness it said the chain was ok.
func TestAuditVerifyWitness(t *testing.T) {
	c := newCLI(t)
	st := c.store()
	w, err := audit.OpenWitness(filepath.Join(c.data, audit.WitnessFile), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	st.OnAuditAppend(w.Note)
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { _ = w.Run(ctx) })
	l := audit.New(st)
	for range 6 {
		if err := l.Record(t.Context(), audit.Entry{ActorName: "Ann", Surface: audit.Page, Action: audit.SignIn}); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	wg.Wait()
	if out := c.mustRun("", "audit", "verify"); !strings.Contains(out, "audit-head: seq 6 is on the chain, which ends at seq 6") {
		t.Errorf("verify = %q; want the witness on the chain", out)
	}
	c.cutAuditRows(`id > 4`)
	out, err := c.run("", "audit", "verify")
	if want := "the newest 2 rows were removed (the witness "; err == nil || !strings.Contains(err.Error(), want) ||
		!strings.Contains(err.Error(), "has seq 6 hash ") || !strings.HasSuffix(err.Error(), "the database ends at seq 4)") {
		t.Errorf("verify after the DELETE = %q, %v; want %q…", out, err, want)
	}
	if out, err := c.run("", "audit", "verify", "--head", "5:"+strings.Repeat("ab", 32)); err == nil {
		t.Errorf("verify --head of a row removed = %q; want a failure", out)
	}
}

// TestAuditCLIWitnessed: an admin command run beside a server (its data
// directory holds the witness `parley serve` opened) appends the head of
// the rows it recorded to the witness, so cutting them from the trail in
// Postgres shows; run where there is no witness file, it makes none (a
// shell on another host must not start a witness of its own).
func TestAuditCLIWitnessed(t *testing.T) {
	c := newCLI(t)
	path := filepath.Join(c.data, audit.WitnessFile)
	c.mustRun("a long password\n", "user", "add", "ann@example.com", "--admin")
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("a CLI without a server's witness made one: %v", err)
	}
	if err := os.WriteFile(path, nil, 0o600); err != nil { // as `parley serve` opens it
		t.Fatal(err)
	}
	c.mustRun("", "token", "add", "ann@example.com", "--name", "laptop")
	c.mustRun("", "user", "remove", "ann@example.com")
	h, err := audit.ReadWitness(path)
	if err != nil || h.Seq != 3 {
		t.Fatalf("the witness after three CLI rows: seq %d, %v; want 3", h.Seq, err)
	}
	if out := c.mustRun("", "audit", "verify"); !strings.Contains(out, "audit-head: seq 3 is on the chain, which ends at seq 3") {
		t.Errorf("verify = %q; want the witness on the chain", out)
	}
	c.cutAuditRows(`id = 3`)
	if out, err := c.run("", "audit", "verify"); err == nil || !strings.Contains(err.Error(), "the newest row was removed") {
		t.Errorf("verify after the CLI's row was cut = %q, %v; want the cut found", out, err)
	}
}

// TestAuditCLIWitnessRefusesALink: a link at the witness's place (the
// server's account could put one there, and the command may run as root)
// is never followed: the command warns, and the file the link names is
// left as it was.
func TestAuditCLIWitnessRefusesALink(t *testing.T) {
	c := newCLI(t)
	target := filepath.Join(t.TempDir(), "precious")
	if err := os.WriteFile(target, []byte("keep\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(c.data, audit.WitnessFile)); err != nil {
		t.Fatal(err)
	}
	out := c.mustRun("a long password\n", "user", "add", "ann@example.com", "--admin")
	if !strings.Contains(out, "warning: the audit witness was not written") {
		t.Errorf("output %q; want a warning", out)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep\n" {
		t.Errorf("the file the link names now holds %q", b)
	}
}

// cutAuditRows deletes the audit rows that match where, as someone who can
// change the database (its trigger disabled) would.
func (c *cli) cutAuditRows(where string) {
	c.t.Helper()
	conn, err := pgx.Connect(c.t.Context(), c.dbURL)
	if err != nil {
		c.t.Fatal(err)
	}
	defer conn.Close(c.t.Context())
	for _, sql := range []string{`ALTER TABLE audit_log DISABLE TRIGGER audit_log_no_update`, `DELETE FROM audit_log WHERE ` + where} {
		if _, err := conn.Exec(c.t.Context(), sql); err != nil {
			c.t.Fatal(err)
		}
	}
}
