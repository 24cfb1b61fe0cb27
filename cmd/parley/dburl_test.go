package main

import (
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
)

// TestDatabaseURLFlagPassword: a password given in --database-url is
// refused before anything connects, since every user of the machine may
// read a process's arguments; in DATABASE_URL it is taken. Neither the
// refusal nor the usage shows the password.
func TestDatabaseURLFlagPassword(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tc := range []struct {
		name    string
		args    []string
		env     map[string]string
		refused bool
	}{
		{"in the URL", []string{"--database-url", "postgres://parley:s3cret@db/parley"}, nil, true},
		{"in the query", []string{"--database-url=postgres://parley@db/parley?password=s3cret"}, nil, true},
		{"as a setting", []string{"--database-url", "host=db user=parley password=s3cret"}, nil, true},
		{"no password", []string{"--database-url", "postgres://parley@db/parley?sslmode=disable"}, nil, false},
		{"in the environment", nil, map[string]string{"DATABASE_URL": "postgres://parley:s3cret@db/parley"}, false},
	} {
		c, err := parseConfig("serve", tc.args, env(tc.env), io.Discard)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if c.dbURLPassword != tc.refused {
			t.Errorf("%s: refused %v, want %v", tc.name, c.dbURLPassword, tc.refused)
		}
		if !tc.refused {
			continue
		}
		_, _, err = openStore(t.Context(), c, log, false)
		if !errors.Is(err, errPasswordInArgs) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: openStore = %v, want the refusal without the password", tc.name, err)
		}
	}
	// The admin subcommands take the flag too.
	fs, c := adminFlags("user", env(nil), io.Discard)
	if _, err := parseInterspersed(fs, []string{"list", "--database-url", "postgres://u:s3cret@db/x"}); err != nil || !c.dbURLPassword {
		t.Errorf("admin flags: %v, refused %v", err, c.dbURLPassword)
	}
	var usage strings.Builder
	fs, _ = adminFlags("user", env(map[string]string{"DATABASE_URL": "postgres://u:s3cret@db/x"}), &usage)
	fs.PrintDefaults()
	if strings.Contains(usage.String(), "s3cret") {
		t.Errorf("the usage shows DATABASE_URL's password:\n%s", usage.String())
	}
}
