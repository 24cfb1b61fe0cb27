package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"time"

	"parley/oidclogin"
	"parley/secretbox"
	"parley/store"
)

// oidcConfig is OpenID Connect sign-in as the environment gives it
// (PARLEY_OIDC_*, PARLEY_PASSWORD_LOGIN; package oidclogin).
type oidcConfig struct {
	Issuer, Name, ClientID, ClientSecret string
	Domains, AdminGroup, GroupsClaim     string
	ProjectRoles                         string
	Refresh                              time.Duration
	PasswordLogin                        bool
	TokenKey                             []byte // PARLEY_OIDC_TOKEN_KEY; nil = the data directory's key file
}

// tokenKeyFile is where the key that seals refresh tokens is kept when
// PARLEY_OIDC_TOKEN_KEY is unset, under the data directory.
var tokenKeyFile = filepath.Join("keys", "oidc-token.key")

// tokenKeySet reads PARLEY_OIDC_TOKEN_KEY: 64 hex digits.
func tokenKeySet(c *config, name, v string) error {
	if v == "" {
		return nil
	}
	key, err := secretbox.ParseKey(v)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	c.OIDC.TokenKey = key
	return nil
}

// refreshSet reads PARLEY_OIDC_REFRESH: a Go duration (15m, 1h) or seconds.
func refreshSet(c *config, name, v string) error {
	d, err := time.ParseDuration(v)
	if err != nil {
		d, err = parseSeconds(v)
	}
	if err != nil || d <= 0 || d > oidclogin.MaxRefresh {
		return fmt.Errorf("%s %q: want how often a sign-in is re-checked with the provider, such as 15m, above 0 and at most 1h", name, v)
	}
	c.OIDC.Refresh = d
	return nil
}

// loginConfig is the package's Config, checked: grants that do not parse
// and a provider without a client are refused before anything starts.
func (c oidcConfig) loginConfig(publicURL string, secure bool) (oidclogin.Config, error) {
	grants, err := oidclogin.ParseGrants(c.ProjectRoles)
	if err != nil {
		return oidclogin.Config{}, fmt.Errorf("PARLEY_OIDC_PROJECT_ROLES: %w", err)
	}
	lc := oidclogin.Config{Issuer: c.Issuer, ClientID: c.ClientID, ClientSecret: c.ClientSecret, Name: c.Name,
		RedirectURL: publicURL + oidclogin.CallbackPath, Domains: oidclogin.ParseDomains(c.Domains),
		AdminGroup: c.AdminGroup, GroupsClaim: c.GroupsClaim, Grants: grants, Refresh: c.Refresh,
		PasswordLogin: c.PasswordLogin, Secure: secure}
	if lc.Name == "" {
		if u, err := url.Parse(c.Issuer); err == nil {
			lc.Name = u.Host
		}
	}
	return lc, lc.Check()
}

// newSSO is the OpenID Connect sign-in, nil when no issuer is set. The
// flow cookie's key is kept in the database, so every replica has it; the
// key that seals refresh tokens is not (tokenKey, else the data
// directory's key file), and a replica given another refuses to start.
func newSSO(ctx context.Context, lc oidclogin.Config, tokenKey []byte, dataDir string, st *store.Store, log *slog.Logger) (*oidclogin.Provider, error) {
	if lc.Issuer == "" {
		return nil, nil
	}
	from := "PARLEY_OIDC_TOKEN_KEY"
	if lc.SealKey = tokenKey; tokenKey == nil {
		from = filepath.Join(dataDir, tokenKeyFile)
		var err error
		if lc.SealKey, err = secretbox.LoadKey(from); err != nil {
			return nil, fmt.Errorf("the key that seals single sign-on refresh tokens: %w", err)
		}
	}
	b := make([]byte, 32)
	rand.Read(b)
	key, err := st.InstallationValue(ctx, "oidc_flow_key", hex.EncodeToString(b))
	if err != nil {
		return nil, err
	}
	lc.Key = []byte(key)
	p := oidclogin.New(lc, st, log)
	p.Deactivated = st.UserDeactivated // a deactivated account is refused at sign-in
	if err := p.SealAtRest(ctx); errors.Is(err, oidclogin.ErrOtherKey) {
		return nil, fmt.Errorf("%w (this replica's key is %s): give every replica the same key, the first replica's %s file or PARLEY_OIDC_TOKEN_KEY set to its contents; if that key is lost, see \"A lost token key\" in docs/sso.md", err, from, tokenKeyFile)
	} else if err != nil {
		return nil, err
	}
	return p, nil
}
