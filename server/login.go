package server

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"parley/audit"
	"parley/clientip"
	"parley/limit"
	"parley/store"
	"parley/views"
)

const (
	// sessionTTL is how long a sign-in lasts; the server refuses it after.
	sessionTTL = 14 * 24 * time.Hour
	// loginCookie carries the login form's CSRF token (double submit): the
	// form has no sign-in to hold one yet.
	loginCookie = "parley_login"
	// Throttling: maxLoginFailures failed sign-ins of one email from one
	// address within loginWindow lock that pair out for loginLock: the
	// maxLoginFailures-th wrong password locks. Counted in Postgres, so
	// every replica agrees and a restart forgets nothing.
	maxLoginFailures = 5
	loginWindow      = 15 * time.Minute
	loginLock        = 15 * time.Minute
)

func (s *Server) handleLoginPage() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.viewer(r).signedIn() {
			http.Redirect(w, r, localPath(r.URL.Query().Get("next")), http.StatusSeeOther)
			return
		}
		s.renderLogin(w, r, http.StatusOK, views.LoginView{Next: r.URL.Query().Get("next")})
	})
}

// renderLogin shows the login form with its form token: the one the
// browser has, so that another tab or a stray request (a favicon sent to
// the login page) does not invalidate a form already shown, else a new one.
func (s *Server) renderLogin(w http.ResponseWriter, r *http.Request, status int, lv views.LoginView) {
	s.ssoView(&lv)
	lv.CSRF = randomToken()
	if c, err := r.Cookie(loginCookie); err == nil && len(c.Value) == len(lv.CSRF) {
		lv.CSRF = c.Value
	}
	http.SetCookie(w, &http.Cookie{Name: loginCookie, Value: lv.CSRF, Path: "/login", MaxAge: 3600,
		HttpOnly: true, Secure: s.secure(r), SameSite: http.SameSiteStrictMode})
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_ = views.LoginPage(lv).Render(r.Context(), w)
}

func (s *Server) handleLogin() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.passwordLoginOff() {
			s.fail(w, r, &httpError{http.StatusForbidden, "Signing in with a password is turned off here: use the single sign-on button on the login page."})
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
		if err := r.ParseForm(); err != nil {
			s.fail(w, r, badRequest("The login form could not be read; reload the page and try again."))
			return
		}
		c, err := r.Cookie(loginCookie)
		if err != nil || !tokensEqual(r.PostFormValue(csrfField), c.Value) {
			s.fail(w, r, errCSRF)
			return
		}
		email := strings.TrimSpace(r.PostFormValue("email"))
		lv := views.LoginView{Email: email, Next: r.PostFormValue("next")}
		ip := clientIP(r)
		key, known, err := s.throttleKey(r, email, ip)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if !known {
			ok, wait, err := s.allowAddress(r, key)
			if err != nil {
				s.fail(w, r, err)
				return
			}
			if !ok {
				lv.Error = fmt.Sprintf("Too many sign-in attempts from your address: try again in %d seconds.", max(int(wait.Round(time.Second)/time.Second), 1))
				s.renderLogin(w, r, http.StatusTooManyRequests, lv)
				return
			}
		}
		u, err := s.throttledLogin(r, email, key)
		var locked lockedError
		switch {
		case errors.As(err, &locked):
			s.record(r, signInFailed(email, "locked"))
			lv.Error = lockedMessage(time.Time(locked))
			s.renderLogin(w, r, http.StatusTooManyRequests, lv)
			return
		case errors.Is(err, errBadLogin):
			s.record(r, signInFailed(email, "wrong email or password"))
			lv.Error = "Wrong email or password."
			s.renderLogin(w, r, http.StatusUnauthorized, lv)
			return
		case errors.Is(err, limit.ErrBusy):
			s.fail(w, r, &httpError{http.StatusServiceUnavailable, "Parley is checking too many sign-ins right now: try again in a minute."})
			return
		}
		if err == nil {
			err = s.signedInFrom(w, r, u, key, known)
		}
		if err == nil {
			err = s.startSession(w, r, u, ip)
		}
		if err != nil {
			s.fail(w, r, err)
			return
		}
		s.record(r, audit.Entry{ActorID: u.ID, ActorName: u.DisplayName(), Action: audit.SignIn, Target: u.Email})
		http.Redirect(w, r, localPath(lv.Next), http.StatusSeeOther)
	})
}

// lockedError says sign-ins of an email from an address are locked until then.
type lockedError time.Time

func (e lockedError) Error() string { return "sign-in locked" }

// throttledLogin checks a sign-in under the throttle. The attempt is
// counted before its password is checked, atomically in Postgres, so a
// burst of concurrent tries cannot all pass before any is recorded: the
// first maxLoginFailures attempts of a window are checked, and the
// maxLoginFailures-th wrong one locks the pair (the right password as the
// maxLoginFailures-th attempt still signs in). A success clears the count
// (startSession).
func (s *Server) throttledLogin(r *http.Request, email, ip string) (store.User, error) {
	until, err := s.st.LoginLockedUntil(r.Context(), email, ip)
	if err != nil {
		return store.User{}, err
	}
	if !until.IsZero() {
		return store.User{}, lockedError(until)
	}
	n, until, err := s.st.CountLoginAttempt(r.Context(), email, ip, loginWindow)
	if err != nil {
		return store.User{}, err
	}
	if !until.IsZero() {
		return store.User{}, lockedError(until)
	}
	if n > maxLoginFailures {
		return store.User{}, s.lockLogin(r, email, ip)
	}
	u, err := s.checkLogin(r, email, r.PostFormValue("password"))
	if errors.Is(err, errBadLogin) && n == maxLoginFailures {
		return store.User{}, s.lockLogin(r, email, ip)
	}
	return u, err
}

func (s *Server) lockLogin(r *http.Request, email, ip string) error {
	until, err := s.st.LockLogin(r.Context(), email, ip, loginLock)
	if err != nil {
		return err
	}
	return lockedError(until)
}

var errBadLogin = errors.New("wrong email or password")

// checkLogin returns the user whose email and password these are. An
// unknown email costs the same bcrypt comparison as a wrong password, so
// timing does not tell which emails have accounts.
func (s *Server) checkLogin(r *http.Request, email, password string) (store.User, error) {
	u, err := s.st.UserByEmail(r.Context(), email)
	hash := u.PasswordHash
	switch {
	case errors.Is(err, store.ErrNotFound):
		hash = s.decoyHash()
	case err != nil:
		return store.User{}, err
	}
	// Both paths take a worker of the bounded pool: a flood of sign-ins
	// waits for one instead of taking every CPU.
	var ok bool
	if err := s.lim.bcrypt.Do(r.Context(), func() { ok = passwordMatches(hash, password) }); err != nil {
		return store.User{}, err
	}
	if !ok || u.ID == 0 {
		return store.User{}, errBadLogin
	}
	if err := s.refuseDeactivated(r.Context(), u.ID); err != nil { // account.go
		return store.User{}, err
	}
	return u, nil
}

// startSession records a new sign-in and sets its cookie.
func (s *Server) startSession(w http.ResponseWriter, r *http.Request, u store.User, ip string) error {
	if err := s.st.ClearLoginFailures(r.Context(), u.Email, ip); err != nil {
		return err
	}
	if err := s.st.SweepAuthSessions(r.Context()); err != nil {
		return err
	}
	token := randomToken()
	expires := time.Now().Add(sessionTTL)
	ua := r.UserAgent()
	if len(ua) > 256 {
		ua = ua[:256]
	}
	if err := s.st.CreateAuthSession(r.Context(), u.ID, tokenHash(token), randomToken(), expires, ip, ua); err != nil {
		return err
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: token, Path: "/", Expires: expires,
		MaxAge: int(sessionTTL / time.Second), HttpOnly: true, Secure: s.secure(r), SameSite: http.SameSiteLaxMode})
	http.SetCookie(w, &http.Cookie{Name: loginCookie, Value: "", Path: "/login", MaxAge: -1,
		HttpOnly: true, Secure: s.secure(r), SameSite: http.SameSiteStrictMode})
	return nil
}

func (s *Server) handleLogout() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := s.st.RevokeAuthSession(r.Context(), s.viewer(r).token); err != nil {
			s.fail(w, r, err)
			return
		}
		http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1,
			HttpOnly: true, Secure: s.secure(r), SameSite: http.SameSiteLaxMode})
		http.Redirect(w, r, "/login", http.StatusSeeOther)
	})
}

// secure reports whether cookies get the Secure flag: when the request
// came over TLS, or the server is configured as served over HTTPS (behind
// a proxy that terminates TLS).
func (s *Server) secure(r *http.Request) bool { return r.TLS != nil || s.cfg.SecureCookies }

// clientIP is the address the request came from: the connection's peer,
// or behind trusted proxies (PARLEY_TRUSTED_PROXIES) the client their
// forwarding headers name (package clientip; Handler resolves it once).
// From any other peer the headers are ignored: anyone can send them.
func clientIP(r *http.Request) string { return clientip.Of(r) }

// localPath keeps a redirect target on this site: a path, never another
// host. Browsers drop tabs and newlines from a URL and read "\" as "/", so
// "/\t/evil.example" and "/\evil.example" are "//evil.example" to them:
// any control character or backslash is refused, as is anything a URL
// parser reads with a scheme or a host.
func localPath(p string) string {
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") {
		return "/"
	}
	for _, c := range p {
		if c < 0x20 || c == 0x7f || c == '\\' || c == 0x85 || c == 0x2028 || c == 0x2029 {
			return "/"
		}
	}
	u, err := url.Parse(p)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || strings.HasPrefix(u.Path, "//") {
		return "/"
	}
	return p
}

func lockedMessage(until time.Time) string {
	mins := int(time.Until(until).Round(time.Minute) / time.Minute)
	return fmt.Sprintf("Too many failed sign-ins for this email from your address: try again in %d minutes, or ask an admin to reset your password.", max(mins, 1))
}
