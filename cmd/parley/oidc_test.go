package main

import (
	"io"
	"strings"
	"testing"
	"time"
)

// TestOIDCConfig: the PARLEY_OIDC_* rows reach oidclogin.Config, the
// refresh is bounded by an hour, and settings that cannot work are
// refused before anything starts.
func TestOIDCConfig(t *testing.T) {
	env := map[string]string{
		"PARLEY_OIDC_ISSUER": "https://idp.example/realms/acme", "PARLEY_OIDC_CLIENT_ID": "parley",
		"PARLEY_OIDC_CLIENT_SECRET": "s3cret", "PARLEY_OIDC_DOMAINS": "acme.com, acme.org",
		"PARLEY_OIDC_PROJECT_ROLES": "eng=Backend:member", "PARLEY_OIDC_REFRESH": "30m", "PARLEY_PASSWORD_LOGIN": "off",
	}
	parse := func(change map[string]string) (config, error) {
		return parseConfig("serve", nil, func(k string) string {
			if v, ok := change[k]; ok {
				return v
			}
			return env[k]
		}, io.Discard)
	}
	c, err := parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	lc, err := c.OIDC.loginConfig("https://parley.example", false)
	if err != nil {
		t.Fatal(err)
	}
	if lc.Refresh != 30*time.Minute || lc.PasswordLogin || lc.GroupsClaim != "groups" || lc.Name != "idp.example" ||
		lc.RedirectURL != "https://parley.example/login/oidc/callback" || len(lc.Domains) != 2 || len(lc.Grants) != 1 {
		t.Errorf("config = %+v", lc)
	}
	if _, err := parse(map[string]string{"PARLEY_OIDC_REFRESH": "2h"}); err == nil || !strings.Contains(err.Error(), "at most 1h") {
		t.Errorf("PARLEY_OIDC_REFRESH=2h: %v, want refused", err)
	}
	for name, change := range map[string]map[string]string{
		"password off, no issuer": {"PARLEY_OIDC_ISSUER": ""},
		"a role that is no role":  {"PARLEY_OIDC_PROJECT_ROLES": "eng=Backend:king"},
		"no client id":            {"PARLEY_OIDC_CLIENT_ID": ""},
	} {
		c, err := parse(change)
		if err == nil {
			_, err = c.OIDC.loginConfig("https://parley.example", false)
		}
		if err == nil {
			t.Errorf("%s: taken", name)
		}
	}
}
