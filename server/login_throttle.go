package server

import (
	"encoding/hex"
	"net/http"
	"time"

	"parley/clientip"
	"parley/store"
)

// Sign-in throttling, and why an outsider cannot use it to lock a
// teammate out (docs/security.md, "Sign-in throttling"):
//
//   - Each attempt is counted against a key: the browser's device cookie
//     when it is a known browser of the e-mail tried (it signed in as that
//     person before), else the client's address (behind trusted proxies,
//     the one their forwarding headers name; an IPv6 address's /64).
//   - An address has a budget of PARLEY_LOGINS_PER_MINUTE attempts a
//     minute, whatever e-mails they name; a known browser does not spend
//     it. Wrong passwords from one address slow that address only.
//   - maxLoginFailures wrong passwords of one e-mail under one key lock
//     that pair for loginLock: the e-mail stays open from every other
//     address and from the person's known browsers.
//
// Both counts live in Postgres, so every replica sees the same ones.

// deviceCookie holds a random token naming a browser that signed in; only
// its SHA-256 is stored. It goes only to the login form.
const deviceCookie = "parley_device"

// deviceCookieAge is how long a browser keeps its device cookie; the
// store forgets a device unused for as long.
const deviceCookieAge = 180 * 24 * time.Hour

// throttleKey is what a sign-in attempt of email counts against, and
// whether the browser is a known one of that e-mail.
func (s *Server) throttleKey(r *http.Request, email, addr string) (key string, known bool, err error) {
	if c, err := r.Cookie(deviceCookie); err == nil && len(c.Value) == len(randomToken()) {
		h := tokenHash(c.Value)
		ok, err := s.st.KnownLoginDevice(r.Context(), h, email)
		if err != nil {
			return "", false, err
		}
		if ok {
			return "device:" + hex.EncodeToString(h[:16]), true, nil
		}
	}
	return clientip.Group(addr), false, nil
}

// allowAddress takes one attempt from the address key's budget (shared by
// the replicas); ok is false, with how long to wait, when it is spent.
func (s *Server) allowAddress(r *http.Request, key string) (ok bool, wait time.Duration, err error) {
	n := s.cfg.Limits.LoginsPerMinute
	if n <= 0 {
		return true, 0, nil
	}
	return s.st.TakeLoginToken(r.Context(), key, n)
}

// signedInFrom ends the throttle's count of u under key after a right
// password, and makes this browser a known one of u: the device cookie
// it has when it is already u's, else a new one.
func (s *Server) signedInFrom(w http.ResponseWriter, r *http.Request, u store.User, key string, known bool) error {
	if err := s.st.ClearLoginFailures(r.Context(), u.Email, key); err != nil {
		return err
	}
	token := randomToken()
	if c, err := r.Cookie(deviceCookie); err == nil && known {
		token = c.Value
	}
	if err := s.st.RememberLoginDevice(r.Context(), u.ID, tokenHash(token)); err != nil {
		return err
	}
	http.SetCookie(w, &http.Cookie{Name: deviceCookie, Value: token, Path: "/login", MaxAge: int(deviceCookieAge / time.Second),
		HttpOnly: true, Secure: s.secure(r), SameSite: http.SameSiteStrictMode})
	return nil
}

// withClient resolves each request's client address through the trusted
// proxies (PARLEY_TRUSTED_PROXIES) once, for clientIP.
func (s *Server) withClient(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, clientip.With(r, s.cfg.TrustedProxies.Client(r)))
	})
}
