package oidclogin

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// flowCookie carries one sign-in's state, nonce and PKCE verifier from
// the redirect to the provider to the callback: HttpOnly, signed with the
// installation's key, for flowTTL, sent only to the flow's paths.
const (
	flowCookie = "parley_oidc"
	flowTTL    = 10 * time.Minute
)

// flow is what the cookie holds.
type flow struct {
	State    string `json:"s"`
	Nonce    string `json:"n"`
	Verifier string `json:"v"` // PKCE code_verifier (RFC 7636)
	Next     string `json:"x"` // where the person goes once signed in
	Expires  int64  `json:"e"` // Unix seconds
}

// Begin starts a sign-in: it sets the flow cookie and returns the
// provider's authorization URL to redirect to, asking for the code flow
// with state, nonce and an S256 PKCE challenge.
func (p *Provider) Begin(w http.ResponseWriter, r *http.Request, next string) (string, error) {
	d, err := p.discover(r.Context())
	if err != nil {
		return "", &Refusal{Reason: "provider unreachable", Message: "The sign-in provider cannot be reached right now: try again in a minute.", Err: err}
	}
	f := flow{State: random(), Nonce: random(), Verifier: oauth2.GenerateVerifier(), Next: next,
		Expires: time.Now().Add(flowTTL).Unix()}
	http.SetCookie(w, &http.Cookie{Name: flowCookie, Value: p.seal(f), Path: StartPath, MaxAge: int(flowTTL / time.Second),
		HttpOnly: true, Secure: r.TLS != nil || p.cfg.Secure, SameSite: http.SameSiteLaxMode})
	return p.oauth(d, p.redirectURL(r)).AuthCodeURL(f.State, oidc.Nonce(f.Nonce), oauth2.S256ChallengeOption(f.Verifier)), nil
}

// Result is a person the provider vouched for.
type Result struct {
	Identity
	RefreshToken string
	Next         string
}

// Finish checks the provider's answer at the callback: the flow cookie
// (once: it is cleared), the state, the code exchanged with the PKCE
// verifier, the ID token (signature, issuer, audience, expiry) and its
// nonce, and the person (a verified e-mail of an allowed domain). Every
// refusal is a *Refusal.
func (p *Provider) Finish(w http.ResponseWriter, r *http.Request) (Result, error) {
	http.SetCookie(w, &http.Cookie{Name: flowCookie, Value: "", Path: StartPath, MaxAge: -1,
		HttpOnly: true, Secure: r.TLS != nil || p.cfg.Secure, SameSite: http.SameSiteLaxMode})
	f, ok := p.flowOf(r)
	if !ok {
		return Result{}, refused("no flow cookie", "This sign-in was not started here, or took more than ten minutes: start again from the login page.")
	}
	q := r.URL.Query()
	if !equal(q.Get("state"), f.State) {
		return Result{}, refused("state mismatch", "This sign-in could not be checked (its state does not match the one this browser started): start again from the login page.")
	}
	if e := q.Get("error"); e != "" {
		return Result{}, refused("provider error: "+e, "The sign-in provider refused the sign-in ("+e+"): ask an admin if this persists.")
	}
	d, err := p.discover(r.Context())
	if err != nil {
		return Result{}, &Refusal{Reason: "provider unreachable", Message: "The sign-in provider cannot be reached right now: try again in a minute.", Err: err}
	}
	tok, err := p.oauth(d, p.redirectURL(r)).Exchange(p.ctx(r.Context()), q.Get("code"), oauth2.VerifierOption(f.Verifier))
	if err != nil {
		return Result{}, &Refusal{Reason: "code exchange failed", Message: "The sign-in provider did not accept this sign-in's code: start again from the login page.", Err: err}
	}
	id, err := p.verify(r.Context(), d, tok)
	if err != nil {
		return Result{}, err
	}
	if !equal(id.nonce, f.Nonce) {
		return Result{}, refused("nonce mismatch", "The sign-in provider's answer was not for this sign-in (its nonce does not match): start again from the login page.")
	}
	return Result{Identity: id, RefreshToken: tok.RefreshToken, Next: f.Next}, nil
}

// verify checks the token response's ID token and reads the person from it.
func (p *Provider) verify(ctx context.Context, d *discovered, tok *oauth2.Token) (Identity, error) {
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return Identity{}, refused("no id token", "The sign-in provider sent no ID token: ask an admin to check that the client is an OpenID Connect client.")
	}
	idt, err := d.verifier.Verify(p.ctx(ctx), raw)
	var expired *oidc.TokenExpiredError
	switch {
	case errors.As(err, &expired):
		return Identity{}, &Refusal{Reason: "id token expired", Message: "The sign-in provider's answer has expired: start again from the login page (if it keeps happening, this server's clock or the provider's is wrong).", Err: err}
	case err != nil && strings.Contains(err.Error(), "audience"):
		return Identity{}, &Refusal{Reason: "wrong audience", Message: "The sign-in provider's answer was meant for another application, not this Parley: ask an admin to check PARLEY_OIDC_CLIENT_ID.", Err: err}
	case err != nil:
		return Identity{}, &Refusal{Reason: "id token invalid", Message: "The sign-in provider's answer could not be verified: start again from the login page.", Err: err}
	}
	return p.identity(ctx, d, idt, tok)
}

// Refusal is a sign-in refused: Message is the sentence the person sees,
// Reason what the audit trail records.
type Refusal struct {
	Reason, Message string
	Err             error
}

func (e *Refusal) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("oidc sign-in refused: %s: %v", e.Reason, e.Err)
	}
	return "oidc sign-in refused: " + e.Reason
}

func (e *Refusal) Unwrap() error { return e.Err }

func refused(reason, msg string) *Refusal { return &Refusal{Reason: reason, Message: msg} }

// seal signs the flow into the cookie's value: payload.mac, base64url.
func (p *Provider) seal(f flow) string {
	b, _ := json.Marshal(f)
	payload := base64.RawURLEncoding.EncodeToString(b)
	return payload + "." + p.mac(payload)
}

// flowOf reads the request's flow cookie: signed by us and not expired.
func (p *Provider) flowOf(r *http.Request) (flow, bool) {
	c, err := r.Cookie(flowCookie)
	if err != nil || len(c.Value) > 4096 {
		return flow{}, false
	}
	payload, mac, ok := strings.Cut(c.Value, ".")
	if !ok || !equal(mac, p.mac(payload)) {
		return flow{}, false
	}
	b, err := base64.RawURLEncoding.DecodeString(payload)
	var f flow
	if err != nil || json.Unmarshal(b, &f) != nil || time.Now().Unix() > f.Expires {
		return flow{}, false
	}
	return f, true
}

func (p *Provider) mac(payload string) string {
	h := hmac.New(sha256.New, p.cfg.Key)
	h.Write([]byte("parley oidc flow\x00" + payload))
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

func equal(a, b string) bool {
	return a != "" && b != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

func random() string {
	b := make([]byte, 24)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
