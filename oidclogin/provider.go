package oidclogin

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"parley/secretbox"
	"parley/store"
)

// Provider is the OpenID Connect sign-in: the flow (flow.go), the accounts
// it makes (accounts.go) and the re-checks of its sign-ins (refresh.go).
type Provider struct {
	cfg    Config
	st     *store.Store
	log    *slog.Logger
	client *http.Client   // every call to the provider: discovery, keys, tokens
	box    *secretbox.Box // seals refresh tokens at rest (seal.go); nil = boxErr
	boxErr error

	// Deactivated, when set, reports whether an account is deactivated:
	// such an account is refused at sign-in. (Deactivating ends its
	// sign-ins at once: the store revokes them, and a revoked sign-in is
	// never re-checked.) nil = no account is.
	Deactivated func(ctx context.Context, userID int64) (bool, error)

	mu        sync.Mutex
	discovery *discovered // nil until the provider answered once
}

// discovered is what the provider's discovery document says.
type discovered struct {
	provider *oidc.Provider
	verifier *oidc.IDTokenVerifier
	offline  bool // it offers the offline_access scope (a refresh token)
}

// New returns the Provider for cfg. It reaches the provider only when
// someone signs in, so Parley starts while the provider is down.
func New(cfg Config, st *store.Store, log *slog.Logger) *Provider {
	p := &Provider{cfg: cfg, st: st, log: log, client: &http.Client{Timeout: 15 * time.Second}}
	p.box, p.boxErr = secretbox.New(cfg.SealKey)
	return p
}

// Name is what the login page's button names.
func (p *Provider) Name() string { return p.cfg.Name }

// PasswordLogin reports whether the email and password form stays.
func (p *Provider) PasswordLogin() bool { return p.cfg.PasswordLogin }

// Refresh is how often a sign-in is re-checked with the provider.
func (p *Provider) Refresh() time.Duration { return p.cfg.Refresh }

func (p *Provider) ctx(ctx context.Context) context.Context {
	return oidc.ClientContext(ctx, p.client)
}

// discover reads the provider's discovery document once it answers.
func (p *Provider) discover(ctx context.Context) (*discovered, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.discovery != nil {
		return p.discovery, nil
	}
	prov, err := oidc.NewProvider(p.ctx(ctx), p.cfg.Issuer)
	if err != nil {
		return nil, fmt.Errorf("discover %s: %w", p.cfg.Issuer, err)
	}
	var meta struct {
		Scopes []string `json:"scopes_supported"`
	}
	_ = prov.Claims(&meta)
	// go-oidc's verifier checks the signature against the provider's keys,
	// the issuer, that the audience holds our client id, and the expiry.
	v := prov.VerifierContext(p.ctx(context.WithoutCancel(ctx)), &oidc.Config{ClientID: p.cfg.ClientID})
	p.discovery = &discovered{provider: prov, verifier: v, offline: slices.Contains(meta.Scopes, oidc.ScopeOfflineAccess)}
	return p.discovery, nil
}

// oauth is the OAuth 2.0 client for the redirect URL.
func (p *Provider) oauth(d *discovered, redirect string) *oauth2.Config {
	scopes := []string{oidc.ScopeOpenID, "email", "profile"}
	if d.offline {
		scopes = append(scopes, oidc.ScopeOfflineAccess)
	}
	return &oauth2.Config{ClientID: p.cfg.ClientID, ClientSecret: p.cfg.ClientSecret,
		Endpoint: d.provider.Endpoint(), RedirectURL: redirect, Scopes: scopes}
}

// redirectURL is where the provider sends the browser back.
func (p *Provider) redirectURL(r *http.Request) string {
	if p.cfg.RedirectURL != "" {
		return p.cfg.RedirectURL
	}
	scheme := "http"
	if r.TLS != nil || p.cfg.Secure {
		scheme = "https"
	}
	return scheme + "://" + r.Host + CallbackPath
}
