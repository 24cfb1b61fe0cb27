// Package webpush sends Web Push messages (RFC 8030) to browsers and
// phones: the payload encrypted for the device (RFC 8291, aes128gcm) and
// the request signed with the server's VAPID key (RFC 8292).
//
// The encryption and signing are github.com/SherClockHolmes/webpush-go's;
// this package adds what Parley needs around it: checked subscriptions, a
// payload limit, a guarded HTTP client, and the push service's answer
// turned into ErrGone or an error that names the status.
package webpush

import (
	"crypto/ecdh"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	webpushgo "github.com/SherClockHolmes/webpush-go"
)

// Keys is the server's VAPID key pair (RFC 8292), each half unpadded
// base64url as webpush-go writes it: Public is the uncompressed P-256
// point (65 bytes) that browsers get as applicationServerKey, Private the
// 32-byte scalar. Generate it once and keep it: every subscription is
// bound to Public.
type Keys struct {
	Public  string
	Private string
}

// NewKeys generates a VAPID key pair.
func NewKeys() (Keys, error) {
	private, public, err := webpushgo.GenerateVAPIDKeys()
	if err != nil {
		return Keys{}, fmt.Errorf("generate vapid keys: %w", err)
	}
	return Keys{Public: public, Private: private}, nil
}

// check says what is wrong with k, if anything.
func (k Keys) check() error {
	pub, err := decodeKey(k.Public)
	if err != nil || len(pub) != 65 || pub[0] != 4 {
		return fmt.Errorf("the VAPID public key is not a base64url P-256 point")
	}
	if priv, err := decodeKey(k.Private); err != nil || len(priv) != 32 {
		return fmt.Errorf("the VAPID private key is not a base64url 32-byte P-256 scalar")
	}
	return nil
}

// Subscription is where and for whom a device receives pushes: the push
// service's endpoint URL, the device's P-256 ECDH public key (p256dh) and
// its 16-byte authentication secret (auth), both base64url as the browser's
// PushSubscription.toJSON() gives them.
type Subscription struct {
	Endpoint string
	P256dh   string
	Auth     string
}

// ParseSubscription reads a browser's PushSubscription.toJSON() and checks
// it as Validate does. Whether Parley may send to the endpoint is the
// caller's question (netguard.CheckURL).
func ParseSubscription(data []byte) (Subscription, error) {
	var j struct {
		Endpoint string `json:"endpoint"`
		Keys     struct {
			P256dh string `json:"p256dh"`
			Auth   string `json:"auth"`
		} `json:"keys"`
	}
	if err := json.Unmarshal(data, &j); err != nil {
		return Subscription{}, fmt.Errorf("The subscription is not the JSON of a PushSubscription: %v.", err)
	}
	s := Subscription{Endpoint: j.Endpoint, P256dh: j.Keys.P256dh, Auth: j.Keys.Auth}
	return s, s.Validate()
}

// Validate says, in a sentence, what is wrong with s: a missing endpoint,
// or keys that are not base64url, not a P-256 point, or not 16 bytes.
func (s Subscription) Validate() error {
	if s.Endpoint == "" {
		return fmt.Errorf("The subscription has no endpoint.")
	}
	p256dh, err := decodeKey(s.P256dh)
	if err != nil || s.P256dh == "" {
		return fmt.Errorf("The subscription's p256dh key must be base64url: %q was given.", clip(s.P256dh))
	}
	if _, err := ecdh.P256().NewPublicKey(p256dh); err != nil {
		return fmt.Errorf("The subscription's p256dh key is not a P-256 public key (%d bytes were given, 65 are needed).", len(p256dh))
	}
	auth, err := decodeKey(s.Auth)
	if err != nil || s.Auth == "" {
		return fmt.Errorf("The subscription's auth secret must be base64url: %q was given.", clip(s.Auth))
	}
	if len(auth) != 16 {
		return fmt.Errorf("The subscription's auth secret must be 16 bytes; it is %d.", len(auth))
	}
	return nil
}

// decodeKey decodes base64url with or without padding.
func decodeKey(s string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
}

// clip keeps what an error message repeats of user input short.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
