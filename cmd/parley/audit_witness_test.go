package main

import (
	"context"
	"log/slog"
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
	conn, err := pgx.Connect(t.Context(), c.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	for _, sql := range []string{`ALTER TABLE audit_log DISABLE TRIGGER audit_log_no_update`, `DELETE FROM audit_log WHERE id > 4`} {
		if _, err := conn.Exec(t.Context(), sql); err != nil {
			t.Fatal(err)
		}
	}
	out, err := c.run("", "audit", "verify")
	if want := "the newest 2 rows were removed (the witness "; err == nil || !strings.Contains(err.Error(), want) ||
		!strings.Contains(err.Error(), "has seq 6 hash ") || !strings.HasSuffix(err.Error(), "the database ends at seq 4)") {
		t.Errorf("verify after the DELETE = %q, %v; want %q…", out, err, want)
	}
	if out, err := c.run("", "audit", "verify", "--head", "5:"+strings.Repeat("ab", 32)); err == nil {
		t.Errorf("verify --head of a row removed = %q; want a failure", out)
	}
}
