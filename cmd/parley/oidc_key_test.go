package main

import (
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"parley/oidclogin"
	"parley/store"
	"parley/store/pgtest"
)

// TestOIDCTokenKey: the key that seals refresh tokens is made 0600 in the
// data directory at the first start and read again after; replicas
// sharing it, or given it by PARLEY_OIDC_TOKEN_KEY, start; a replica with
// another key refuses to start, saying which key and what to do, and so
// does a PARLEY_OIDC_TOKEN_KEY that is not a key.
func TestOIDCTokenKey(t *testing.T) {
	st, err := store.Open(t.Context(), pgtest.New(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	env := map[string]string{"PARLEY_OIDC_ISSUER": "https://idp.example/realms/acme", "PARLEY_OIDC_CLIENT_ID": "parley"}
	start := func(dataDir string, key string) error {
		t.Helper()
		env["PARLEY_OIDC_TOKEN_KEY"] = key
		c, err := parseConfig("serve", nil, func(k string) string { return env[k] }, io.Discard)
		if err != nil {
			return err
		}
		lc, err := c.OIDC.loginConfig("https://parley.example", false)
		if err != nil {
			t.Fatal(err)
		}
		_, err = newSSO(t.Context(), lc, c.OIDC.TokenKey, dataDir, st, slog.New(slog.DiscardHandler))
		return err
	}
	shared := t.TempDir()
	if err := start(shared, ""); err != nil {
		t.Fatalf("first start: %v", err)
	}
	path := filepath.Join(shared, tokenKeyFile)
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v, want mode 0600", fi, err)
	}
	if err := start(shared, ""); err != nil {
		t.Errorf("a replica sharing the data directory: %v", err)
	}
	contents, _ := os.ReadFile(path)
	if err := start(t.TempDir(), strings.TrimSpace(string(contents))); err != nil {
		t.Errorf("a replica given the key by PARLEY_OIDC_TOKEN_KEY: %v", err)
	}
	other := t.TempDir()
	err = start(other, "")
	if !errors.Is(err, oidclogin.ErrOtherKey) || !strings.Contains(err.Error(), filepath.Join(other, tokenKeyFile)) {
		t.Errorf("a replica with a key file of its own: %v, want ErrOtherKey naming its file", err)
	}
	if err := start(t.TempDir(), strings.Repeat("ab", 32)); !errors.Is(err, oidclogin.ErrOtherKey) || !strings.Contains(err.Error(), "PARLEY_OIDC_TOKEN_KEY") {
		t.Errorf("a replica given another key by PARLEY_OIDC_TOKEN_KEY: %v, want ErrOtherKey naming the variable", err)
	}
	if err := start(t.TempDir(), "not-a-key"); err == nil || !strings.Contains(err.Error(), "hex digits") {
		t.Errorf("PARLEY_OIDC_TOKEN_KEY=not-a-key: %v, want a refusal", err)
	}
}
