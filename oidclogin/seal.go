package oidclogin

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"parley/store"
)

// keyCheck is the installation value that names (secretbox.Box.Check) the
// key refresh tokens are sealed under: the first replica to start keeps
// its own; one given another key refuses to start.
const keyCheck = "oidc_token_key_check"

// ErrOtherKey is SealAtRest's refusal of a key that is not the one the
// installation's refresh tokens are sealed under.
var ErrOtherKey = errors.New("the OpenID Connect token key is not the one this installation's refresh tokens are sealed under")

// sealedFor is the additional data that binds a sealed refresh token to
// its row: a label, the sign-in's token hash and the account's id. A
// value copied to another row (another sign-in, another account) does not
// open there.
func sealedFor(tokenHash []byte, userID int64) []byte {
	ad := append([]byte("parley oidc refresh token\x00"), tokenHash...)
	return binary.BigEndian.AppendUint64(ad, uint64(userID))
}

// sealRefresh is the refresh token as the row keeps it (nothing for none).
func (p *Provider) sealRefresh(tokenHash []byte, userID int64, refresh string) ([]byte, error) {
	if p.box == nil {
		return nil, fmt.Errorf("seal refresh token: %w", p.boxErr)
	}
	if refresh == "" {
		return nil, nil
	}
	return p.box.Seal([]byte(refresh), sealedFor(tokenHash, userID)), nil
}

// refreshOf is the row's refresh token: the clear one of a row written
// before tokens were sealed (or by a replica not yet upgraded: the newer
// then), else the sealed one opened. A sealed value that does not open
// gives an error wrapping secretbox.ErrOpen.
func (p *Provider) refreshOf(s store.OIDCSession) (string, error) {
	if s.RefreshToken != "" || len(s.RefreshSealed) == 0 {
		return s.RefreshToken, nil
	}
	if p.box == nil {
		return "", fmt.Errorf("open refresh token: %w", p.boxErr)
	}
	b, err := p.box.Open(s.RefreshSealed, sealedFor(s.TokenHash, s.UserID))
	if err != nil {
		return "", fmt.Errorf("refresh token of user %d: %w", s.UserID, err)
	}
	return string(b), nil
}

// SealAtRest makes sure the refresh tokens are sealed, at start: it
// refuses a key other than the installation's (ErrOtherKey: with another
// key a replica could open no sign-in the others sealed, and would end
// them all), then seals every refresh token still kept in clear (rows
// from before tokens were sealed).
func (p *Provider) SealAtRest(ctx context.Context) error {
	if p.box == nil {
		return fmt.Errorf("oidc token key: %w", p.boxErr)
	}
	kept, err := p.st.InstallationValue(ctx, keyCheck, p.box.Check())
	if err != nil {
		return err
	}
	if kept != p.box.Check() {
		return ErrOtherKey
	}
	list, err := p.st.ClearOIDCSessions(ctx)
	if err != nil {
		return err
	}
	for _, s := range list {
		sealed, err := p.sealRefresh(s.TokenHash, s.UserID, s.RefreshToken)
		if err != nil {
			return err
		}
		if err := p.st.SealOIDCSession(ctx, s.TokenHash, s.RefreshToken, sealed); err != nil {
			return err
		}
	}
	if len(list) > 0 {
		p.log.Info("oidc: sealed the refresh tokens kept in clear", "count", len(list))
	}
	return nil
}
