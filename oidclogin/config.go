// Package oidclogin signs people in through an OpenID Connect provider:
// the authorization code flow with PKCE, state and nonce (go-oidc verifies
// the ID token's signature, issuer, audience and expiry), accounts made
// just in time, the provider's groups mapped to Parley's admin flag and to
// project roles, and each sign-in re-checked with the provider every
// Refresh, ending when the provider takes something away.
package oidclogin

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"parley/secretbox"
)

// MaxRefresh is the longest a sign-in may go without a check with the
// provider: a person removed there loses access within it.
const MaxRefresh = time.Hour

// Config is the provider and what its answers grant.
type Config struct {
	Issuer       string // PARLEY_OIDC_ISSUER; "" = no OpenID Connect sign-in
	ClientID     string
	ClientSecret string
	// Name is what the login page's button says: "Sign in with <Name>".
	Name string
	// RedirectURL is PARLEY_PUBLIC_URL + CallbackPath; "" = from the request's host (tests).
	RedirectURL string
	Domains     []string // allowed e-mail domains, lower case; none = any
	AdminGroup  string   // members of this group are admins; "" = the groups do not govern the flag
	GroupsClaim string   // the ID token's claim that lists the groups
	Grants      []Grant  // PARLEY_OIDC_PROJECT_ROLES
	Refresh     time.Duration
	// PasswordLogin keeps the email and password form.
	PasswordLogin bool
	// Key signs the flow cookie; every replica needs the same.
	Key []byte
	// SealKey seals the refresh tokens kept in Postgres (secretbox, 32
	// bytes); it is never kept there, and every replica needs the same.
	SealKey []byte
	// Secure marks the flow cookie Secure without TLS here (a TLS proxy).
	Secure bool
}

// Paths of the flow.
const (
	StartPath    = "/login/oidc"
	CallbackPath = "/login/oidc/callback"
)

// Grant is one line of the mapping: members of Group get Role in Project
// (a project's id or its name).
type Grant struct {
	Group, Project, Role string
}

// ParseGrants reads PARLEY_OIDC_PROJECT_ROLES: entries separated by ";",
// each GROUP=PROJECT:ROLE, where PROJECT is a project's id or name and
// ROLE is owner, member or viewer ("eng=Backend:member; leads=3:owner").
// The last ":" splits the project from the role, so a name may hold one.
func ParseGrants(s string) ([]Grant, error) {
	var out []Grant
	for _, e := range strings.Split(s, ";") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		group, rest, ok := strings.Cut(e, "=")
		i := strings.LastIndex(rest, ":")
		if !ok || i < 0 {
			return nil, fmt.Errorf("%q: want GROUP=PROJECT:ROLE", e)
		}
		g := Grant{Group: strings.TrimSpace(group), Project: strings.TrimSpace(rest[:i]), Role: strings.TrimSpace(rest[i+1:])}
		if g.Group == "" || g.Project == "" {
			return nil, fmt.Errorf("%q: want GROUP=PROJECT:ROLE with a group and a project", e)
		}
		if !slices.Contains([]string{"owner", "member", "viewer"}, g.Role) {
			return nil, fmt.Errorf("%q: the role must be owner, member or viewer", e)
		}
		out = append(out, g)
	}
	return out, nil
}

// ParseDomains reads a comma-separated list of e-mail domains.
func ParseDomains(s string) []string {
	var out []string
	for _, d := range strings.Split(s, ",") {
		if d = strings.ToLower(strings.TrimPrefix(strings.TrimSpace(d), "@")); d != "" {
			out = append(out, d)
		}
	}
	return out
}

// Check refuses a configuration that cannot work.
func (c Config) Check() error {
	switch {
	case c.Issuer == "" && !c.PasswordLogin:
		return fmt.Errorf("PARLEY_PASSWORD_LOGIN is off but PARLEY_OIDC_ISSUER is not set: nobody could sign in")
	case c.Issuer == "":
		return nil
	case c.ClientID == "":
		return fmt.Errorf("PARLEY_OIDC_ISSUER is set but PARLEY_OIDC_CLIENT_ID is not")
	case c.Refresh <= 0 || c.Refresh > MaxRefresh:
		return fmt.Errorf("PARLEY_OIDC_REFRESH %s: want a duration above 0 and at most %s", c.Refresh, MaxRefresh)
	case c.GroupsClaim == "":
		return fmt.Errorf("PARLEY_OIDC_GROUPS_CLAIM is empty: name the ID token's claim that lists groups")
	case c.SealKey != nil && len(c.SealKey) != secretbox.KeySize:
		return fmt.Errorf("PARLEY_OIDC_TOKEN_KEY: want %d bytes (%d hex digits)", secretbox.KeySize, 2*secretbox.KeySize)
	}
	return nil
}

// domainAllowed reports whether email's domain is one of the allowed.
func (c Config) domainAllowed(email string) bool {
	if len(c.Domains) == 0 {
		return true
	}
	at := strings.LastIndex(email, "@")
	return at > 0 && slices.Contains(c.Domains, strings.ToLower(email[at+1:]))
}
