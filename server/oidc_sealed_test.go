package server

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5"

	"parley/oidclogin"
	"parley/runner/fakeapi"
	"parley/store"
)

// recordTokens notes the refresh token of every answer of the provider's
// token endpoint (testOP.issued), so a test can look for it in Postgres.
func (o *testOP) recordTokens(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/oauth/token" {
			h.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		var body struct {
			RefreshToken string `json:"refresh_token"`
		}
		if json.Unmarshal(rec.Body.Bytes(), &body) == nil && body.RefreshToken != "" {
			o.set(func(o *testOP) { o.issued = append(o.issued, body.RefreshToken) })
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
	})
}

// sealEnv is ssoEnv with re-checks run by the test (check) and the
// provider's log kept in logs.
func sealEnv(t *testing.T, change func(*oidclogin.Config)) (*env, *testOP, context.Context, *syncBuffer) {
	t.Helper()
	o := startOP(t)
	logs := &syncBuffer{}
	sso := func(st *store.Store, _ *slog.Logger) *oidclogin.Provider {
		return o.provider(time.Hour, change)(st, slog.New(slog.NewTextHandler(logs, nil)))
	}
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true, sso: sso})
	o.set(func(o *testOP) { o.redirect = e.web.URL + oidclogin.CallbackPath })
	return e, o, browser(t), logs
}

// pgConn is a connection to the env's database, as someone reading it.
func pgConn(t *testing.T, e *env) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(t.Context(), e.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// oidcRows is every provider sign-in's row as a database dump shows it
// (JSON), by its token hash in hex.
func oidcRows(t *testing.T, db *pgx.Conn) map[string]string {
	t.Helper()
	rows, _ := db.Query(t.Context(), `SELECT encode(token_hash, 'hex'), to_jsonb(o)::text FROM oidc_sessions o`)
	out := map[string]string{}
	var h, row string
	_, err := pgx.ForEachRow(rows, []any{&h, &row}, func() error { out[h] = row; return nil })
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// newRow signs user in through the provider in a browser without cookies
// and returns the new sign-in's token hash.
func newRow(t *testing.T, e *env, ctx context.Context, db *pgx.Conn, user string) string {
	t.Helper()
	before := oidcRows(t, db)
	step(t, ctx, "sign out", chromedp.ActionFunc(func(ctx context.Context) error {
		return network.ClearBrowserCookies().Do(ctx)
	}))
	opSignIn(t, e, ctx, user)
	for h := range oidcRows(t, db) {
		if _, ok := before[h]; !ok {
			return h
		}
	}
	t.Fatalf("signing in as %s made no provider sign-in", user)
	return ""
}

// checkAll makes every provider sign-in due and re-checks them, as the
// re-check loop does every PARLEY_OIDC_REFRESH.
func checkAll(t *testing.T, e *env, db *pgx.Conn) {
	t.Helper()
	if _, err := db.Exec(t.Context(), `UPDATE oidc_sessions SET checked_at = now() - interval '1 day'`); err != nil {
		t.Fatal(err)
	}
	if err := e.srv.sso.CheckDue(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// live reports whether the sign-in (token hash in hex) is still valid.
func live(t *testing.T, db *pgx.Conn, hash string) bool {
	t.Helper()
	var ok bool
	err := db.QueryRow(t.Context(), `SELECT revoked_at IS NULL AND expires_at > now() FROM auth_sessions WHERE token_hash = decode($1, 'hex')`, hash).Scan(&ok)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// noTokenIn fails when the row holds a refresh token the provider issued.
func noTokenIn(t *testing.T, o *testOP, row, when string) {
	t.Helper()
	o.mu.Lock()
	issued := append([]string{}, o.issued...)
	o.mu.Unlock()
	if len(issued) == 0 {
		t.Fatal("the provider issued no refresh token")
	}
	for _, tok := range issued {
		if strings.Contains(row, tok) {
			t.Fatalf("%s: the row in Postgres holds a refresh token in clear: %s", when, row)
		}
	}
}

// refreshColumns are the oidc_sessions columns that hold the refresh token.
func refreshColumns(t *testing.T, db *pgx.Conn) []string {
	t.Helper()
	rows, _ := db.Query(t.Context(), `SELECT column_name FROM information_schema.columns
		WHERE table_name = 'oidc_sessions' AND column_name LIKE 'refresh%' ORDER BY column_name`)
	cols, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(cols) == 0 {
		t.Fatalf("refresh token columns: %v %v", cols, err)
	}
	return cols
}

// TestOIDCRefreshTokenSealedAtRest: the row a sign-in keeps in Postgres
// holds none of the refresh tokens the provider issued, before and after a
// re-check; the re-check still refreshes at the provider end to end (a
// group the provider added is applied and the sign-in lasts).
func TestOIDCRefreshTokenSealedAtRest(t *testing.T) {
	e, o, ctx, _ := sealEnv(t, nil)
	db := pgConn(t, e)
	h := newRow(t, e, ctx, db, "alice")
	noTokenIn(t, o, oidcRows(t, db)[h], "after sign-in")

	o.setGroups("alice", "eng", "admins")
	o.mu.Lock()
	n := len(o.issued)
	o.mu.Unlock()
	checkAll(t, e, db)
	if !live(t, db, h) {
		t.Fatal("the re-check ended the sign-in")
	}
	if u, _ := e.st.UserByEmail(t.Context(), "alice@example.com"); !u.IsAdmin {
		t.Fatal("the re-check did not refresh at the provider (the admin group was not applied)")
	}
	o.mu.Lock()
	refreshed := len(o.issued) > n
	o.mu.Unlock()
	if !refreshed {
		t.Fatal("the provider issued no new refresh token at the re-check")
	}
	noTokenIn(t, o, oidcRows(t, db)[h], "after the re-check")
	checkAll(t, e, db) // the new token, kept sealed, works too
	if !live(t, db, h) {
		t.Fatal("the second re-check ended the sign-in")
	}
}

// TestOIDCSealedTokenCopiedToAnotherSignIn: a refresh token copied in the
// database from one sign-in's row to another's (the same person's) does
// not open there: that sign-in ends at its re-check, the other lasts.
func TestOIDCSealedTokenCopiedToAnotherSignIn(t *testing.T) {
	e, _, ctx, logs := sealEnv(t, nil)
	db := pgConn(t, e)
	from := newRow(t, e, ctx, db, "alice")
	to := newRow(t, e, ctx, db, "alice")
	for _, c := range refreshColumns(t, db) {
		q := `UPDATE oidc_sessions t SET ` + c + ` = f.` + c + ` FROM oidc_sessions f
			WHERE f.token_hash = decode($1, 'hex') AND t.token_hash = decode($2, 'hex')`
		if _, err := db.Exec(t.Context(), q, from, to); err != nil {
			t.Fatal(err)
		}
	}
	checkAll(t, e, db)
	if live(t, db, to) {
		t.Fatalf("the sign-in given another's refresh token is still live; log:\n%s", logs)
	}
	if !live(t, db, from) {
		t.Fatalf("the sign-in whose token was copied ended; log:\n%s", logs)
	}
	if !strings.Contains(logs.String(), "does not open") {
		t.Fatalf("no log line says the token does not open:\n%s", logs)
	}
}

// TestOIDCTamperedTokenEndsSignIn: a stored refresh token changed by one
// bit ends its sign-in at the re-check, cleanly, with a log line that
// says so; it is never sent to the provider.
func TestOIDCTamperedTokenEndsSignIn(t *testing.T) {
	e, _, ctx, logs := sealEnv(t, nil)
	db := pgConn(t, e)
	h := newRow(t, e, ctx, db, "alice")
	tamper(t, db, h)
	checkAll(t, e, db)
	if live(t, db, h) {
		t.Fatalf("the sign-in with a tampered refresh token is still live; log:\n%s", logs)
	}
	if !strings.Contains(logs.String(), "does not open") {
		t.Fatalf("no log line says the token does not open:\n%s", logs)
	}
}

// tamper flips the last bit of each non-empty refresh token column of the
// sign-in's row.
func tamper(t *testing.T, db *pgx.Conn, hash string) {
	t.Helper()
	for _, c := range refreshColumns(t, db) {
		var typ string
		db.QueryRow(t.Context(), `SELECT data_type FROM information_schema.columns WHERE table_name = 'oidc_sessions' AND column_name = $1`, c).Scan(&typ)
		q := `UPDATE oidc_sessions SET ` + c + ` = left(` + c + `, -1) || chr(ascii(right(` + c + `, 1)) # 1)`
		if typ == "bytea" {
			q = `UPDATE oidc_sessions SET ` + c + ` = set_byte(` + c + `, length(` + c + `) - 1, get_byte(` + c + `, length(` + c + `) - 1) # 1)`
		}
		if _, err := db.Exec(t.Context(), q+` WHERE token_hash = decode($1, 'hex') AND length(`+c+`) > 0`, hash); err != nil {
			t.Fatal(err)
		}
	}
}

// TestOIDCPlaintextRowSealedOnCheck: a row that holds its refresh token
// in clear (written before tokens were sealed, or by a replica not yet
// upgraded) still works at its re-check, which seals it.
func TestOIDCPlaintextRowSealedOnCheck(t *testing.T) {
	e, o, ctx, logs := sealEnv(t, nil)
	db := pgConn(t, e)
	h := newRow(t, e, ctx, db, "alice")
	o.mu.Lock()
	plain := o.issued[len(o.issued)-1]
	o.mu.Unlock()
	if _, err := db.Exec(t.Context(), `UPDATE oidc_sessions SET refresh_token = $2 WHERE token_hash = decode($1, 'hex')`, h, plain); err != nil {
		t.Fatal(err)
	}
	checkAll(t, e, db)
	if !live(t, db, h) {
		t.Fatalf("the re-check of a row from before ended it; log:\n%s", logs)
	}
	noTokenIn(t, o, oidcRows(t, db)[h], "after the re-check of a row from before")
	checkAll(t, e, db)
	if !live(t, db, h) {
		t.Fatalf("the second re-check ended it; log:\n%s", logs)
	}
}

// TestOIDCSealAtRestSealsClearRows: at start (SealAtRest), every refresh
// token still kept in clear is sealed for its row, and the sign-in's
// re-check then refreshes with it.
func TestOIDCSealAtRestSealsClearRows(t *testing.T) {
	e, o, ctx, logs := sealEnv(t, nil)
	db := pgConn(t, e)
	h := newRow(t, e, ctx, db, "alice")
	o.mu.Lock()
	plain := o.issued[len(o.issued)-1]
	o.mu.Unlock()
	if _, err := db.Exec(t.Context(), `UPDATE oidc_sessions SET refresh_token = $2, refresh_sealed = '' WHERE token_hash = decode($1, 'hex')`, h, plain); err != nil {
		t.Fatal(err)
	}
	if err := e.srv.sso.SealAtRest(t.Context()); err != nil {
		t.Fatal(err)
	}
	noTokenIn(t, o, oidcRows(t, db)[h], "after SealAtRest")
	checkAll(t, e, db)
	if !live(t, db, h) {
		t.Fatalf("the re-check after SealAtRest ended the sign-in; log:\n%s", logs)
	}
}
