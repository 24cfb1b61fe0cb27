package audit_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"parley/audit"
	"parley/migrations"
	"parley/store"
	"parley/store/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// newLog is an audit trail in a fresh database, and a raw connection to
// that database as its owner (to tamper with).
func newLog(t *testing.T) (*audit.Log, *store.Store, *pgx.Conn) {
	t.Helper()
	url := pgtest.New(t)
	st, err := store.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(t.Context()) })
	return audit.New(st), st, conn
}

func record(t *testing.T, l *audit.Log, e audit.Entry) {
	t.Helper()
	if err := l.Record(t.Context(), e); err != nil {
		t.Fatal(err)
	}
}

// some records n varied entries: details with numbers, unicode, a NUL and
// nesting, which must survive jsonb and still verify.
func some(t *testing.T, l *audit.Log, n int) {
	t.Helper()
	for i := range n {
		record(t, l, audit.Entry{ActorID: int64(i + 1), ActorName: "Ann Ö", From: "192.0.2.7", Surface: audit.Page,
			Action: audit.ProjectSettings, ProjectID: int64(i%2 + 1), Target: "project",
			Detail: map[string]any{"n": i, "f": 1.5, "big": 1e21, "s": "a\x00<b>&ü", "list": []any{1, "x", nil}, "z": map[string]any{"b": 1, "a": 2}}})
	}
}

func TestChainVerifies(t *testing.T) {
	l, _, _ := newLog(t)
	res, err := l.Verify(t.Context())
	if err != nil || !res.OK() || res.Rows != 0 {
		t.Fatalf("empty trail: %v, %v", res, err)
	}
	some(t, l, 5)
	res, err = l.Verify(t.Context())
	if err != nil || !res.OK() || res.Rows != 5 {
		t.Fatalf("Verify = %v, %v; want ok with 5 rows", res, err)
	}
}

// TestConcurrentAppendsChain: appends from many connections at once (as
// from several replicas) still form one linear chain.
func TestConcurrentAppendsChain(t *testing.T) {
	l, _, _ := newLog(t)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			if err := l.Record(t.Context(), audit.Entry{ActorID: int64(i + 1), Surface: audit.System, Action: audit.SignIn}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if res, err := l.Verify(t.Context()); err != nil || !res.OK() || res.Rows != 16 {
		t.Fatalf("Verify = %v, %v; want ok with 16 rows", res, err)
	}
}

func TestAppendOnlyTrigger(t *testing.T) {
	l, _, conn := newLog(t)
	some(t, l, 1)
	for _, sql := range []string{`UPDATE audit_log SET target = 'x'`, `DELETE FROM audit_log`, `TRUNCATE audit_log`} {
		if _, err := conn.Exec(t.Context(), sql); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: err = %v, want the append-only refusal", sql, err)
		}
	}
}

// TestVerifyFindsTampering: a row changed, re-hashed or removed by hand
// (the owner disabling the trigger first) is named by Verify.
func TestVerifyFindsTampering(t *testing.T) {
	cases := []struct {
		name   string
		sql    string
		broken int64
	}{
		{"detail edited", `UPDATE audit_log SET detail = '{"n": 99}' WHERE id = 3`, 3},
		{"actor edited", `UPDATE audit_log SET actor_name = 'Mallory' WHERE id = 2`, 2},
		{"row and its hash rewritten", `UPDATE audit_log SET detail = '{}', hash = sha256(prev_hash) WHERE id = 3`, 3},
		{"hash overwritten", `UPDATE audit_log SET hash = '\x00' WHERE id = 4`, 4},
		{"row deleted", `DELETE FROM audit_log WHERE id = 3`, 4},
		{"first row deleted", `DELETE FROM audit_log WHERE id = 1`, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l, _, conn := newLog(t)
			some(t, l, 5)
			for _, sql := range []string{`ALTER TABLE audit_log DISABLE TRIGGER audit_log_no_update`, c.sql} {
				if _, err := conn.Exec(t.Context(), sql); err != nil {
					t.Fatalf("%s: %v", sql, err)
				}
			}
			res, err := l.Verify(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if res.BrokenID != c.broken {
				t.Errorf("Verify = %v; want broken at row %d", res, c.broken)
			}
		})
	}
}

func TestScopeAndFilters(t *testing.T) {
	l, st, _ := newLog(t)
	ctx := t.Context()
	hash := "x"
	owner, _ := st.CreateUser(ctx, "o@example.com", "Olga", hash, false)
	other, _ := st.CreateUser(ctx, "p@example.com", "Pete", hash, false)
	mine, _ := st.CreateProject(ctx, "mine", owner.ID)
	theirs, _ := st.CreateProject(ctx, "theirs", other.ID)
	record(t, l, audit.Entry{ActorName: "Olga", Surface: audit.Page, Action: audit.ProjectSettings, ProjectID: mine.ID})
	record(t, l, audit.Entry{ActorName: "Pete", Surface: audit.Page, Action: audit.ProjectSettings, ProjectID: theirs.ID})
	record(t, l, audit.Entry{ActorName: "Pete", Surface: audit.Page, Action: audit.SignIn})
	scope, err := l.Scope(ctx, owner.ID, false)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := l.List(ctx, scope)
	if err != nil || len(rows) != 1 || rows[0].ProjectID != mine.ID {
		t.Fatalf("owner's rows = %+v, %v; want the one of project %d", rows, err, mine.ID)
	}
	all, _ := l.Scope(ctx, other.ID, true)
	if rows, _ := l.List(ctx, all); len(rows) != 3 {
		t.Errorf("admin sees %d rows, want 3", len(rows))
	}
	all.Actor, all.Action = "pet", audit.SignIn
	if rows, _ := l.List(ctx, all); len(rows) != 1 || rows[0].Action != audit.SignIn {
		t.Errorf("actor+action filter = %+v", rows)
	}
	all.Action, all.Since = "", time.Now().Add(time.Hour)
	if rows, _ := l.List(ctx, all); len(rows) != 0 {
		t.Errorf("since an hour ahead = %d rows", len(rows))
	}
	var buf bytes.Buffer
	if err := l.Export(ctx, audit.Filter{ProjectID: theirs.ID}, &buf); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(&buf)
	var lines []map[string]any
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("export line %q: %v", sc.Text(), err)
		}
		lines = append(lines, m)
	}
	if len(lines) != 1 || lines[0]["actor_name"] != "Pete" || len(lines[0]["hash"].(string)) != 64 {
		t.Errorf("export = %v", lines)
	}
}

// TestMigrationDownAndUp: 0021's down migration removes the table and its
// function (the trigger does not stop DROP), and up applies again.
func TestMigrationDownAndUp(t *testing.T) {
	l, _, conn := newLog(t)
	some(t, l, 2)
	for _, name := range []string{"0021_audit.down.sql", "0021_audit.up.sql"} {
		sql, err := migrations.FS.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(t.Context(), string(sql)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if res, err := l.Verify(t.Context()); err != nil || !res.OK() || res.Rows != 0 {
		t.Errorf("after down and up: %v, %v", res, err)
	}
}
