package oidclogin

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseGrants(t *testing.T) {
	got, err := ParseGrants(" eng=Backend:member; leads=3:owner;;ops=A: B:viewer ")
	if err != nil {
		t.Fatal(err)
	}
	want := []Grant{{"eng", "Backend", "member"}, {"leads", "3", "owner"}, {"ops", "A: B", "viewer"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("ParseGrants (-want +got):\n%s", d)
	}
	for _, bad := range []string{"eng", "eng=Backend", "=Backend:member", "eng=:member", "eng=Backend:king"} {
		if _, err := ParseGrants(bad); err == nil {
			t.Errorf("ParseGrants(%q) took it", bad)
		}
	}
}

func TestLost(t *testing.T) {
	tests := []struct {
		before, now string
		want        bool
	}{
		{"", "", false},
		{"admin p1:member", "admin p1:member", false},
		{"p1:member", "p1:owner p2:viewer", false}, // more is no loss
		{"admin p1:member", "p1:member", true},     // the admin flag went
		{"p1:owner", "p1:member", true},            // lowered
		{"p1:viewer p2:member", "p2:member", true}, // a project went
	}
	for _, tt := range tests {
		if got := lost(tt.before, tt.now); got != tt.want {
			t.Errorf("lost(%q, %q) = %v, want %v", tt.before, tt.now, got, tt.want)
		}
	}
}

func TestDomainAllowed(t *testing.T) {
	c := Config{Domains: ParseDomains(" Example.com, @corp.example ,")}
	for email, want := range map[string]bool{
		"a@example.com": true, "a@EXAMPLE.COM": true, "a@corp.example": true,
		"a@evil.example": false, "a@example.com.evil.example": false, "example.com": false, "a@sub.example.com": false,
	} {
		if got := c.domainAllowed(email); got != want {
			t.Errorf("domainAllowed(%q) = %v, want %v", email, got, want)
		}
	}
}

func TestCheck(t *testing.T) {
	ok := Config{Issuer: "https://idp.example", ClientID: "parley", GroupsClaim: "groups", Refresh: 15 * time.Minute, PasswordLogin: true}
	if err := ok.Check(); err != nil {
		t.Fatal(err)
	}
	for name, change := range map[string]func(*Config){
		"no issuer, no password": func(c *Config) { c.Issuer, c.PasswordLogin = "", false },
		"no client":              func(c *Config) { c.ClientID = "" },
		"refresh over an hour":   func(c *Config) { c.Refresh = 61 * time.Minute },
		"no refresh":             func(c *Config) { c.Refresh = 0 },
		"no groups claim":        func(c *Config) { c.GroupsClaim = "" },
	} {
		c := ok
		change(&c)
		if err := c.Check(); err == nil {
			t.Errorf("%s: Check took it", name)
		}
	}
}
