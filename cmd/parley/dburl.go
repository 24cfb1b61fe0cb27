package main

import (
	"errors"
	"net/url"
	"strings"
)

// errPasswordInArgs refuses a --database-url that carries a password.
var errPasswordInArgs = errors.New("--database-url holds a password, and every user of this machine can read a process's arguments (/proc/<pid>/cmdline): give the URL in DATABASE_URL instead, or the password in PGPASSWORD or a .pgpass file")

// dbURLFlag is --database-url. It notes a password in the URL, which
// openStore then refuses: the flag reaches Parley through its argv. It
// prints no default: that would be DATABASE_URL, password included.
type dbURLFlag struct {
	url      *string
	password *bool
}

func (f dbURLFlag) String() string { return "" }

func (f dbURLFlag) Set(v string) error {
	*f.url, *f.password = v, hasPassword(v)
	return nil
}

// hasPassword says a PostgreSQL connection string names a password: in
// the URL's user info or query (postgres://u:pw@h/db, ?password=pw), or
// as a key=value setting.
func hasPassword(s string) bool {
	if u, err := url.Parse(s); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		_, inUser := u.User.Password()
		return inUser || u.Query().Has("password")
	}
	for _, kv := range strings.Fields(s) {
		if k, _, ok := strings.Cut(kv, "="); ok && k == "password" {
			return true
		}
	}
	return false
}
