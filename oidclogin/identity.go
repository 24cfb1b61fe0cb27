package oidclogin

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// Identity is the person an ID token names.
type Identity struct {
	Issuer, Subject string
	Email, Name     string
	Groups          []string
	nonce           string
}

// claims are what Parley reads of the person, from the ID token or the
// userinfo endpoint.
type claims struct {
	Email         string `json:"email"`
	EmailVerified any    `json:"email_verified"`
	Name          string `json:"name"`
}

// identity reads the person from a verified ID token and refuses one
// without a verified e-mail of an allowed domain. A provider may keep the
// e-mail and profile out of the ID token when it issues an access token
// (OpenID Connect Core 5.4): they are then read from its userinfo
// endpoint, whose "sub" must be the ID token's (Core 5.3.2).
func (p *Provider) identity(ctx context.Context, d *discovered, idt *oidc.IDToken, tok *oauth2.Token) (Identity, error) {
	var c claims
	var all map[string]any
	if err := errors.Join(idt.Claims(&c), idt.Claims(&all)); err != nil {
		return Identity{}, &Refusal{Reason: "claims unreadable", Message: "The sign-in provider's answer could not be read: ask an admin.", Err: err}
	}
	groups := stringsOf(all[p.cfg.GroupsClaim])
	if c.Email == "" && tok.AccessToken != "" {
		ui, err := d.provider.UserInfo(p.ctx(ctx), oauth2.StaticTokenSource(tok))
		if err != nil || ui.Subject != idt.Subject {
			return Identity{}, &Refusal{Reason: "userinfo failed", Message: "The sign-in provider did not share your e-mail address: try again, or ask an admin.", Err: err}
		}
		var more map[string]any
		if err := errors.Join(ui.Claims(&c), ui.Claims(&more)); err != nil {
			return Identity{}, &Refusal{Reason: "userinfo unreadable", Message: "The sign-in provider's answer could not be read: ask an admin.", Err: err}
		}
		if len(groups) == 0 {
			groups = stringsOf(more[p.cfg.GroupsClaim])
		}
	}
	id := Identity{Issuer: idt.Issuer, Subject: idt.Subject, Email: strings.TrimSpace(c.Email), Name: strings.TrimSpace(c.Name),
		Groups: groups, nonce: idt.Nonce}
	switch {
	case id.Email == "":
		return Identity{}, refused("no email", "The sign-in provider did not share your e-mail address: ask an admin to allow the email scope for Parley.")
	case !verified(c.EmailVerified):
		return Identity{}, refused("email not verified", fmt.Sprintf("Your e-mail address %s is not verified at the sign-in provider: verify it there, then sign in again.", id.Email))
	case !p.cfg.domainAllowed(id.Email):
		return Identity{}, refused("domain not allowed", fmt.Sprintf("%s is not an address of a domain allowed to sign in here (%s): sign in with your work account, or ask an admin.",
			id.Email, strings.Join(p.cfg.Domains, ", ")))
	}
	return id, nil
}

// verified reads email_verified, which some providers send as a string.
func verified(v any) bool {
	switch v := v.(type) {
	case bool:
		return v
	case string:
		return v == "true"
	}
	return false
}

// stringsOf reads a groups claim: a list of strings, or one string.
func stringsOf(v any) []string {
	var out []string
	switch v := v.(type) {
	case string:
		out = strings.Fields(strings.ReplaceAll(v, ",", " "))
	case []any:
		for _, x := range v {
			if s, ok := x.(string); ok && s != "" {
				out = append(out, s)
			}
		}
	}
	sort.Strings(out)
	return out
}
