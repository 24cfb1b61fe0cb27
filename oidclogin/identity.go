package oidclogin

import (
	"fmt"
	"sort"
	"strings"

	"github.com/coreos/go-oidc/v3/oidc"
)

// Identity is the person an ID token names.
type Identity struct {
	Issuer, Subject string
	Email, Name     string
	Groups          []string
	nonce           string
}

// identity reads the person from a verified ID token and refuses one
// without a verified e-mail of an allowed domain.
func (p *Provider) identity(idt *oidc.IDToken) (Identity, error) {
	var c struct {
		Email         string `json:"email"`
		EmailVerified any    `json:"email_verified"`
		Name          string `json:"name"`
	}
	var all map[string]any
	if err := idt.Claims(&c); err != nil {
		return Identity{}, &Refusal{Reason: "claims unreadable", Message: "The sign-in provider's answer could not be read: ask an admin.", Err: err}
	}
	if err := idt.Claims(&all); err != nil {
		return Identity{}, &Refusal{Reason: "claims unreadable", Message: "The sign-in provider's answer could not be read: ask an admin.", Err: err}
	}
	id := Identity{Issuer: idt.Issuer, Subject: idt.Subject, Email: strings.TrimSpace(c.Email), Name: strings.TrimSpace(c.Name),
		Groups: stringsOf(all[p.cfg.GroupsClaim]), nonce: idt.Nonce}
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
