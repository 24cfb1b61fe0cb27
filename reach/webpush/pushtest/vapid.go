package pushtest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"strings"
	"time"
)

// maxExp is how far ahead a token may expire: RFC 8292 §2 "MUST NOT be
// more than 24 hours from the time of the request".
const maxExp = 24 * time.Hour

var b64 = base64.RawURLEncoding

// checkVAPID checks the Authorization header of a push (RFC 8292 §3:
// `vapid t=<JWT>, k=<public key>`) and answers the status to refuse it
// with: 401 for a missing or invalid token, 403 for a valid token of
// another key than the one this service's subscriptions are bound to.
func (s *Service) checkVAPID(h string, now time.Time) (int, error) {
	t, k, err := parseVAPID(h)
	if err != nil {
		return http.StatusUnauthorized, err
	}
	key, err := b64.DecodeString(strings.TrimRight(k, "="))
	if err != nil {
		return http.StatusUnauthorized, fmt.Errorf("the k parameter is not base64url")
	}
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), key)
	if err != nil {
		return http.StatusUnauthorized, fmt.Errorf("the k parameter is not a P-256 point")
	}
	claims, err := verifyES256(t, pub)
	if err != nil {
		return http.StatusUnauthorized, err
	}
	if !bytes.Equal(key, s.vapid) {
		return http.StatusForbidden, errors.New("the token is signed with another key than the subscription's")
	}
	if err := s.checkClaims(claims, now); err != nil {
		return http.StatusUnauthorized, err
	}
	return 0, nil
}

// parseVAPID splits `vapid t=<JWT>, k=<key>` into its parameters.
func parseVAPID(h string) (t, k string, err error) {
	scheme, params, _ := strings.Cut(strings.TrimSpace(h), " ")
	if !strings.EqualFold(scheme, "vapid") {
		return "", "", fmt.Errorf("the Authorization is not the vapid scheme: %q", scheme)
	}
	for _, p := range strings.Split(params, ",") {
		name, value, _ := strings.Cut(strings.TrimSpace(p), "=")
		switch strings.ToLower(name) {
		case "t":
			t = value
		case "k":
			k = value
		}
	}
	if t == "" || k == "" {
		return "", "", errors.New("the vapid Authorization lacks t or k")
	}
	return t, k, nil
}

// claims are the VAPID token's claims (RFC 8292 §2).
type claims struct {
	Aud *string  `json:"aud"`
	Exp *float64 `json:"exp"`
	Sub *string  `json:"sub"`
}

// verifyES256 checks a JWT's header and ES256 signature (RFC 7515, RFC
// 7518 §3.4: the signature is r||s, 32 bytes each) and returns its claims.
func verifyES256(jwt string, pub *ecdsa.PublicKey) (claims, error) {
	var c claims
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return c, errors.New("the token is not a JWS compact serialization")
	}
	var header struct {
		Alg string `json:"alg"`
	}
	if err := decodeJSON(parts[0], &header); err != nil || header.Alg != "ES256" {
		return c, fmt.Errorf("the token's alg is %q, not ES256", header.Alg)
	}
	sig, err := b64.DecodeString(parts[2])
	if err != nil || len(sig) != 64 {
		return c, errors.New("the token's signature is not 64 bytes of base64url")
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
	if !ecdsa.Verify(pub, sum[:], r, s) {
		return c, errors.New("the token's signature does not verify with k")
	}
	if err := decodeJSON(parts[1], &c); err != nil {
		return c, fmt.Errorf("the token's claims: %w", err)
	}
	return c, nil
}

// checkClaims: aud is this service's origin, exp is ahead but not more
// than 24 hours, sub names a contact.
func (s *Service) checkClaims(c claims, now time.Time) error {
	if c.Aud == nil || *c.Aud != s.URL {
		return fmt.Errorf("the token's aud is not this push service's origin %s", s.URL)
	}
	if c.Exp == nil {
		return errors.New("the token has no exp")
	}
	exp := time.Unix(int64(*c.Exp), 0)
	if !exp.After(now) {
		return fmt.Errorf("the token expired at %s", exp.UTC().Format(time.RFC3339))
	}
	if exp.Sub(now) > maxExp {
		return fmt.Errorf("the token's exp %s is more than 24 hours ahead", exp.UTC().Format(time.RFC3339))
	}
	// RFC 8292 §2.1: sub "SHOULD include a contact URI ... mailto: or https:".
	if c.Sub == nil || !(strings.HasPrefix(*c.Sub, "mailto:") || strings.HasPrefix(*c.Sub, "https:")) {
		return errors.New("the token's sub is not a mailto: or https: contact")
	}
	return nil
}

func decodeJSON(part string, v any) error {
	data, err := b64.DecodeString(part)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}
