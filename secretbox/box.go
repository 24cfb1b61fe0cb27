// Package secretbox seals the small secrets Parley must keep in Postgres
// (the OpenID Connect refresh tokens) under a key that is never kept
// there: a database dump or a read-only role yields ciphertext only.
//
// A sealed value is a version byte (1), then AES-256-GCM's output with a
// random 96-bit nonce (crypto/cipher.NewGCMWithRandomNonce: nonce, cipher
// text, 16-byte tag). The caller's additional data binds each value to
// where it is kept (a row's key), so a value copied to another row does
// not open there.
package secretbox

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
)

// KeySize is the size of a key: 32 random bytes.
const KeySize = 32

// version1 is the first byte of a value sealed with AES-256-GCM under a
// key derived from the installation's key (the only version so far).
const version1 = 1

// ErrOpen is what Open returns for a value that was changed, was sealed
// for another place (other additional data), or under another key.
var ErrOpen = errors.New("the sealed value does not open with this key (changed, copied from elsewhere, or sealed under another key)")

// Box seals and opens values under one key.
type Box struct {
	aead  cipher.AEAD
	check string
}

// New returns the Box for key, which must be KeySize bytes.
func New(key []byte) (*Box, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("secret key: want %d bytes, got %d", KeySize, len(key))
	}
	// One key, two uses: each gets its own derived key, so the check value
	// published in Postgres says nothing about the encryption key.
	block, err := aes.NewCipher(derive(key, "parley secretbox v1 aes-256-gcm"))
	if err != nil {
		return nil, fmt.Errorf("secret key: %w", err)
	}
	aead, err := cipher.NewGCMWithRandomNonce(block)
	if err != nil {
		return nil, fmt.Errorf("secret key: %w", err)
	}
	return &Box{aead: aead, check: hex.EncodeToString(derive(key, "parley secretbox key check"))}, nil
}

// derive is HMAC-SHA256(key, label): a key of its own for each use.
func derive(key []byte, label string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(label))
	return h.Sum(nil)
}

// Seal returns plain sealed for the place ad names.
func (b *Box) Seal(plain, ad []byte) []byte {
	return b.aead.Seal([]byte{version1}, nil, plain, ad)
}

// Open returns what Seal sealed for the same ad under the same key, or an
// error wrapping ErrOpen. It never panics, whatever sealed holds.
func (b *Box) Open(sealed, ad []byte) ([]byte, error) {
	if len(sealed) == 0 || sealed[0] != version1 {
		return nil, fmt.Errorf("open sealed value: unknown version: %w", ErrOpen)
	}
	if len(sealed) < 1+b.aead.NonceSize()+b.aead.Overhead() {
		return nil, fmt.Errorf("open sealed value: %d bytes is too short: %w", len(sealed), ErrOpen)
	}
	plain, err := b.aead.Open(nil, nil, sealed[1:], ad)
	if err != nil {
		return nil, fmt.Errorf("open sealed value: %w", ErrOpen)
	}
	return plain, nil
}

// Check names the key without revealing it (an HMAC of a fixed label
// under it, in hex): replicas compare theirs with the installation's to
// find out, at start, that they were given another key.
func (b *Box) Check() string { return b.check }
