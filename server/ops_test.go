package server

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"parley/runner/fakeapi"
)

// TestReadyzFollowsTheSchema: /readyz answers 503, saying why, while the
// database's schema is not this build's (behind, a migration failed half
// way, or none applied yet), and 200 once it is; /healthz stays 200.
func TestReadyzFollowsTheSchema(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true})
	get := func(path string) (int, string) {
		t.Helper()
		res, err := http.Get(e.web.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	must := func(sql string) {
		t.Helper()
		if err := e.exec(sql); err != nil {
			t.Fatal(err)
		}
	}
	want := func(what string, code int, says string) {
		t.Helper()
		got, body := get("/readyz")
		if got != code || !strings.Contains(body, says) {
			t.Errorf("%s: /readyz = %d %q, want %d saying %q", what, got, body, code, says)
		}
		if got, _ := get("/healthz"); got != http.StatusOK {
			t.Errorf("%s: /healthz = %d, want 200", what, got)
		}
	}
	want("migrated", http.StatusOK, "ready")
	must(`UPDATE schema_migrations SET version = version - 1`)
	want("one migration behind", http.StatusServiceUnavailable, "this build needs")
	must(`UPDATE schema_migrations SET version = version + 1, dirty = true`)
	want("a migration failed half way", http.StatusServiceUnavailable, "failed half-way")
	must(`UPDATE schema_migrations SET dirty = false`)
	want("migrated again", http.StatusOK, "ready")
	must(`ALTER TABLE schema_migrations RENAME TO schema_migrations_away`)
	want("no migration applied", http.StatusServiceUnavailable, "schema version")
	must(`ALTER TABLE schema_migrations_away RENAME TO schema_migrations`)
	want("back", http.StatusOK, "ready")
}
