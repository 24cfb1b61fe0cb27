package main

import (
	"crypto/sha256"
	"errors"
	"strconv"
	"strings"
	"testing"

	"parley/store"
)

func TestTokenCommands(t *testing.T) {
	c := newCLI(t)
	ctx := t.Context()
	c.mustRun("a password\n", "user", "add", "dev@example.com")
	out := c.mustRun("", "token", "add", "dev@example.com", "--name", "laptop")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	token := lines[len(lines)-1]
	if !strings.HasPrefix(token, "prl_") || strings.ContainsAny(token, " \t") {
		t.Fatalf("the last line is %q, want the token alone:\n%s", token, out)
	}
	st := c.store()
	h := sha256.Sum256([]byte(token))
	u, err := st.UserByAPIToken(ctx, h[:])
	if err != nil || u.Email != "dev@example.com" {
		t.Fatalf("the printed token is %v, %v; want dev's", u, err)
	}
	list := c.mustRun("", "token", "list")
	for _, want := range []string{"ID", "dev@example.com", "laptop"} {
		if !strings.Contains(list, want) {
			t.Errorf("token list lacks %q:\n%s", want, list)
		}
	}
	if strings.Contains(list, token) {
		t.Error("token list shows the token itself")
	}
	if _, err := c.run("", "token", "add", "nobody@example.com"); err == nil || !strings.Contains(err.Error(), "no user") {
		t.Errorf("a token for no user: %v", err)
	}
	tokens, err := st.APITokens(ctx, u.ID)
	if err != nil || len(tokens) != 1 {
		t.Fatal(tokens, err)
	}
	c.mustRun("", "token", "revoke", itoa(tokens[0].ID))
	if _, err := st.UserByAPIToken(ctx, h[:]); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("after revoke the token gives %v, want not found", err)
	}
	if _, err := c.run("", "token", "revoke", itoa(tokens[0].ID)); err == nil {
		t.Error("revoking twice succeeded")
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
