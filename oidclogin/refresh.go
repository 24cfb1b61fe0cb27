package oidclogin

import (
	"context"
	"errors"
	"time"

	"golang.org/x/oauth2"

	"parley/secretbox"
	"parley/store"
)

// checkBatch is how many due sign-ins one pass claims.
const checkBatch = 100

// Run re-checks the sign-ins made through the provider until ctx ends:
// each is checked once Refresh has passed since its last check, so a
// person the provider drops, or whose groups no longer grant what they
// did, is signed out within Refresh and one tick (a quarter of Refresh,
// at most a minute).
func (p *Provider) Run(ctx context.Context) {
	t := time.NewTicker(min(max(p.cfg.Refresh/4, 100*time.Millisecond), time.Minute))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := p.CheckDue(ctx); err != nil && ctx.Err() == nil {
				p.log.Error("oidc: re-check sign-ins", "err", err)
			}
		}
	}
}

// CheckDue re-checks the sign-ins due now. A sign-in ends when its
// sealed refresh token does not open (changed or copied in the database:
// logged as a warning, never sent to the provider), when the provider
// refuses its refresh token (the person was removed or
// disabled there), when there is none to use, when the new ID token fails
// verification or the person's e-mail is no longer allowed, and when the
// groups take away the admin flag or a project role; what the groups now
// grant is applied either way.
func (p *Provider) CheckDue(ctx context.Context) error {
	list, err := p.st.ClaimDueOIDCSessions(ctx, p.cfg.Refresh, checkBatch)
	if err != nil {
		return err
	}
	for _, s := range list {
		reason, err := p.check(ctx, s)
		if reason == "" && err == nil {
			continue
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, secretbox.ErrOpen) {
			p.log.Warn("oidc: a sign-in's refresh token does not open: it was changed in the database, copied from another sign-in, or sealed under another key; the sign-in ends (the person signs in again)",
				"user_id", s.UserID, "err", err)
		} else {
			p.log.Info("oidc: sign-in ended at its re-check", "user_id", s.UserID, "reason", reason, "err", err)
		}
		if err := p.st.RevokeAuthSession(ctx, s.TokenHash); err != nil {
			return err
		}
	}
	return nil
}

// check asks the provider about one sign-in; a reason or an error ends it.
func (p *Provider) check(ctx context.Context, s store.OIDCSession) (string, error) {
	refresh, err := p.refreshOf(s)
	if err != nil {
		return "the refresh token does not open", err
	}
	if refresh == "" {
		return "the provider gave no refresh token: sign in again", nil
	}
	d, err := p.discover(ctx)
	if err != nil {
		return "provider unreachable", err
	}
	tok, err := p.oauth(d, "").TokenSource(p.ctx(ctx), &oauth2.Token{RefreshToken: refresh}).Token()
	if err != nil {
		return "refresh refused", err
	}
	id, err := p.verify(ctx, d, tok)
	if r := (*Refusal)(nil); errors.As(err, &r) {
		return r.Reason, err
	}
	if err != nil {
		return "", err
	}
	u, err := p.st.OIDCUser(ctx, id.Issuer, id.Subject)
	if err != nil || u.ID != s.UserID {
		return "the provider names another person", err
	}
	g, granted := p.grants(ctx, id.Groups)
	if err := p.sync(ctx, u, id.Email, g); err != nil {
		return "", err
	}
	if lost(s.Granted, granted) {
		return "the groups grant less than at sign-in", nil
	}
	rt := tok.RefreshToken
	if rt == "" {
		rt = refresh // the provider keeps the old one valid
	}
	sealed, err := p.sealRefresh(s.TokenHash, s.UserID, rt)
	if err != nil {
		return "", err
	}
	return "", p.st.UpdateOIDCSession(ctx, s.TokenHash, sealed, granted)
}

// Keep records a sign-in made through the provider for its re-checks,
// its refresh token sealed for its row.
func (p *Provider) Keep(ctx context.Context, tokenHash []byte, userID int64, r Result, granted string) error {
	sealed, err := p.sealRefresh(tokenHash, userID, r.RefreshToken)
	if err != nil {
		return err
	}
	return p.st.CreateOIDCSession(ctx, tokenHash, userID, sealed, granted)
}
