package server

import (
	"errors"
	"unicode/utf8"

	"golang.org/x/crypto/bcrypt"
)

// passwordCost is bcrypt's work factor: 2^12 rounds, about a quarter of a
// second on one core. bcrypt (not argon2id) because x/crypto's bcrypt does
// salting, encoding and parameters in its hash string and has no knobs to
// get wrong, and because argon2id's memory hardness (64 MiB a hash at the
// usual settings) lets a burst of logins exhaust a small server's memory.
const passwordCost = 12

// Password length bounds: bcrypt reads at most 72 bytes.
const (
	minPasswordBytes = 8
	maxPasswordBytes = 72
)

// CheckPasswordRules says why a new password is refused, or returns nil.
func CheckPasswordRules(pw string) error {
	switch {
	case !utf8.ValidString(pw):
		return errors.New("the password is not valid text")
	case len(pw) < minPasswordBytes:
		return errors.New("the password is too short: use at least 8 characters")
	case len(pw) > maxPasswordBytes:
		return errors.New("the password is too long: bcrypt reads at most 72 bytes")
	}
	return nil
}

// HashPassword checks a new password against the rules and hashes it.
func HashPassword(pw string) (string, error) { return hashPasswordCost(pw, passwordCost) }

func hashPasswordCost(pw string, cost int) (string, error) {
	if err := CheckPasswordRules(pw); err != nil {
		return "", err
	}
	h, err := bcrypt.GenerateFromPassword([]byte(pw), cost)
	if err != nil {
		return "", err
	}
	return string(h), nil
}

// passwordMatches reports whether pw is the password of hash.
func passwordMatches(hash, pw string) bool {
	return bcrypt.CompareHashAndPassword([]byte(hash), []byte(pw)) == nil
}
