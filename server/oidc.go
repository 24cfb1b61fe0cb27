package server

import (
	"errors"
	"net/http"
	"time"

	"parley/audit"
	"parley/oidclogin"
	"parley/store"
	"parley/views"
)

// oidcRoutes are OpenID Connect sign-in (package oidclogin). They need no
// sign-in (they make one), so they sit beside the token routes, outside
// authenticate; the callback's state, bound to the flow cookie, is its
// CSRF check.
func (s *Server) oidcRoutes(mux *http.ServeMux) {
	if s.sso == nil {
		return
	}
	mux.Handle("GET "+oidclogin.StartPath, s.handleOIDCStart())
	mux.Handle("GET "+oidclogin.CallbackPath, s.handleOIDCCallback())
}

// handleOIDCStart sends the browser to the provider.
func (s *Server) handleOIDCStart() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		to, err := s.sso.Begin(w, r, localPath(r.URL.Query().Get("next")))
		if err != nil {
			s.oidcRefused(w, r, err)
			return
		}
		http.Redirect(w, r, to, http.StatusSeeOther)
	})
}

// handleOIDCCallback checks the provider's answer, signs the person in
// and records the sign-in for its re-checks (oidclogin.Provider.Run).
func (s *Server) handleOIDCCallback() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res, err := s.sso.Finish(w, r)
		if err != nil {
			s.oidcRefused(w, r, err)
			return
		}
		u, granted, err := s.sso.SignIn(r.Context(), res.Identity)
		if err != nil {
			s.oidcRefused(w, r, err)
			return
		}
		hash, err := s.startOIDCSession(w, r, u)
		if err == nil {
			err = s.sso.Keep(r.Context(), hash, u.ID, res, granted)
		}
		if err != nil {
			s.fail(w, r, err)
			return
		}
		s.record(r, audit.Entry{ActorID: u.ID, ActorName: u.DisplayName(), Action: audit.SignIn, Target: u.Email,
			Detail: map[string]any{"method": "oidc"}})
		http.Redirect(w, r, localPath(res.Next), http.StatusSeeOther)
	})
}

// oidcRefused shows the login page with the refusal's sentence.
func (s *Server) oidcRefused(w http.ResponseWriter, r *http.Request, err error) {
	var ref *oidclogin.Refusal
	if !errors.As(err, &ref) {
		s.fail(w, r, err)
		return
	}
	if ref.Err != nil {
		s.log.Warn("oidc sign-in refused", "reason", ref.Reason, "err", ref.Err)
	}
	s.record(r, audit.Entry{Action: audit.SignInFailed, Detail: map[string]any{"reason": ref.Reason, "method": "oidc"}})
	s.renderLogin(w, r, http.StatusForbidden, views.LoginView{Error: ref.Message})
}

// startOIDCSession signs u in as startSession does, and returns the
// sign-in's token hash, which its re-checks are keyed by.
func (s *Server) startOIDCSession(w http.ResponseWriter, r *http.Request, u store.User) ([]byte, error) {
	if err := s.st.SweepAuthSessions(r.Context()); err != nil {
		return nil, err
	}
	token := randomToken()
	expires := time.Now().Add(sessionTTL)
	ua := r.UserAgent()
	if len(ua) > 256 {
		ua = ua[:256]
	}
	if err := s.st.CreateAuthSession(r.Context(), u.ID, tokenHash(token), randomToken(), expires, clientIP(r), ua); err != nil {
		return nil, err
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: token, Path: "/", Expires: expires,
		MaxAge: int(sessionTTL / time.Second), HttpOnly: true, Secure: s.secure(r), SameSite: http.SameSiteLaxMode})
	return tokenHash(token), nil
}

// ssoView fills the login page's sign-in choices.
func (s *Server) ssoView(lv *views.LoginView) {
	if s.sso != nil {
		lv.SSOName = s.sso.Name()
		lv.NoPassword = !s.sso.PasswordLogin()
	}
}

// passwordLoginOff reports whether POST /login is refused.
func (s *Server) passwordLoginOff() bool { return s.sso != nil && !s.sso.PasswordLogin() }
