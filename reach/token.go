package reach

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
)

// NewToken makes a single-use answer token: the token to send (base64url
// of 32 random bytes) and the hash to store.
func NewToken() (token string, hash []byte) {
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand)
	token = base64.RawURLEncoding.EncodeToString(b)
	return token, HashToken(token)
}

// HashToken is the stored form of token.
func HashToken(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// jsonUnmarshal reads raw into v; empty raw leaves v as is.
func jsonUnmarshal(raw []byte, v any) error {
	if len(raw) == 0 {
		return nil
	}
	return json.Unmarshal(raw, v)
}
