package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"parley/audit"
)

// TestAuditVerifyAndExport: `parley audit verify` says ok over a good
// chain, names the row a manual UPDATE changed (the owner disabling the
// append-only trigger first) and fails; export writes one project's rows.
func TestAuditVerifyAndExport(t *testing.T) {
	c := newCLI(t)
	l := audit.New(c.store())
	for i := range 4 {
		e := audit.Entry{ActorName: "Ann", Surface: audit.Page, Action: audit.ProjectSettings, ProjectID: int64(i%2 + 1)}
		if err := l.Record(t.Context(), e); err != nil {
			t.Fatal(err)
		}
	}
	if out := c.mustRun("", "audit", "verify"); !strings.HasPrefix(out, "ok: 4 rows, head ") {
		t.Errorf("verify = %q", out)
	}
	out := c.mustRun("", "audit", "export", "--project", "2", "--since", "2000-01-01")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var first map[string]any
	if len(lines) != 2 || json.Unmarshal([]byte(lines[0]), &first) != nil || first["project_id"] != 2.0 {
		t.Errorf("export --project 2 = %q", out)
	}
	conn, err := pgx.Connect(t.Context(), c.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	for _, sql := range []string{`ALTER TABLE audit_log DISABLE TRIGGER audit_log_no_update`,
		`UPDATE audit_log SET detail = '{"forged": true}' WHERE id = 3`} {
		if _, err := conn.Exec(t.Context(), sql); err != nil {
			t.Fatal(err)
		}
	}
	out, err = c.run("", "audit", "verify")
	if err == nil || !strings.Contains(err.Error(), "broken at row 3") {
		t.Errorf("verify after the UPDATE = %q, %v; want broken at row 3", out, err)
	}
}

// TestAuditCLIActions: accounts and tokens changed with the admin
// commands are recorded with the surface cli and the shell's user.
func TestAuditCLIActions(t *testing.T) {
	c := newCLI(t)
	c.mustRun("a long password\n", "user", "add", "ann@example.com", "--admin")
	c.mustRun("", "token", "add", "ann@example.com", "--name", "laptop")
	c.mustRun("another password\n", "user", "passwd", "ann@example.com")
	c.mustRun("", "token", "revoke", "1")
	c.mustRun("", "user", "remove", "ann@example.com")
	rows, err := audit.New(c.store()).List(t.Context(), audit.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		if r.Surface != audit.CLI || !strings.HasPrefix(r.ActorName, "shell user") {
			t.Errorf("row %+v: want surface cli and the shell's user", r)
		}
		got = append(got, r.Action+" "+r.Target)
	}
	want := "user_remove ann@example.com,token_revoke 1,password_set ann@example.com,token_create laptop,user_add ann@example.com"
	if strings.Join(got, ",") != want {
		t.Errorf("rows = %s\nwant %s", strings.Join(got, ","), want)
	}
}
