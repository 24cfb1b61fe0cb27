package server

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"parley/accounts"
	"parley/audit"
	"parley/store"
	"parley/views"
)

// linkCookie carries an invitation or reset form's CSRF token (double
// submit, as the login form): the holder of a link has no sign-in yet, and
// a forged form must not sign a browser into someone else's new account.
const linkCookie = "parley_link"

// handleLinkPage shows the form of an invitation (kind store.LinkInvite)
// or reset link: a used, expired or unknown link gets a sentence (410).
func (s *Server) handleLinkPage(kind string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l, err := s.accounts().CheckLink(r.Context(), kind, r.PathValue("token"))
		if err == nil {
			err = s.notSignedIn(r)
		}
		if err != nil {
			s.fail(w, r, refused(err))
			return
		}
		s.renderLink(w, r, kind, http.StatusOK, views.LinkView{Email: l.Email})
	})
}

// handleInviteAccept makes the account of an invitation and signs it in.
func (s *Server) handleInviteAccept() http.Handler {
	return s.linkPost(store.LinkInvite, func(w http.ResponseWriter, r *http.Request, token string) {
		u, l, err := s.accounts().Accept(r.Context(), token, r.PostFormValue("name"), r.PostFormValue("password"))
		if err != nil {
			s.linkRefused(w, r, store.LinkInvite, l.Email, err)
			return
		}
		e := audit.Entry{ActorID: u.ID, ActorName: u.DisplayName(), Action: accounts.ActionInviteAccept, Target: u.Email}
		next := "/"
		if l.ProjectID != nil {
			e.ProjectID, next = *l.ProjectID, "/projects/"+strconv.FormatInt(*l.ProjectID, 10)
		}
		s.signInAfterLink(w, r, u, e, next)
	})
}

// handleResetUse sets a new password with a reset link and signs in.
func (s *Server) handleResetUse() http.Handler {
	return s.linkPost(store.LinkReset, func(w http.ResponseWriter, r *http.Request, token string) {
		u, err := s.accounts().Reset(r.Context(), token, r.PostFormValue("password"))
		if err != nil {
			l, _ := s.accounts().CheckLink(r.Context(), store.LinkReset, token)
			s.linkRefused(w, r, store.LinkReset, l.Email, err)
			return
		}
		s.signInAfterLink(w, r, u, audit.Entry{ActorID: u.ID, ActorName: u.DisplayName(), Action: accounts.ActionPasswordReset, Target: u.Email}, "/")
	})
}

// linkPost checks a link form's post (the link works, nobody is signed
// in, the form's token matches its cookie) before use.
func (s *Server) linkPost(kind string, use func(http.ResponseWriter, *http.Request, string)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
		if err := r.ParseForm(); err != nil {
			s.fail(w, r, badRequest("The form could not be read; reload the page and try again."))
			return
		}
		token := r.PathValue("token")
		_, err := s.accounts().CheckLink(r.Context(), kind, token)
		if err == nil {
			err = s.notSignedIn(r)
		}
		if c, cerr := r.Cookie(linkCookie); err == nil && (cerr != nil || !tokensEqual(r.PostFormValue(csrfField), c.Value)) {
			err = errCSRF
		}
		if err != nil {
			s.fail(w, r, refused(err))
			return
		}
		use(w, r, token)
	})
}

// linkRefused shows the form again with a refusal's sentence, or fails.
func (s *Server) linkRefused(w http.ResponseWriter, r *http.Request, kind, email string, err error) {
	var he *httpError
	if errors.As(refused(err), &he) && he.status == http.StatusBadRequest {
		s.renderLink(w, r, kind, http.StatusBadRequest, views.LinkView{Email: email, Name: r.PostFormValue("name"), Error: he.msg})
		return
	}
	s.fail(w, r, refused(err))
}

// signInAfterLink signs the account in on this browser and records e.
func (s *Server) signInAfterLink(w http.ResponseWriter, r *http.Request, u store.User, e audit.Entry, next string) {
	if err := s.startSession(w, r, u, clientIP(r)); err != nil {
		s.fail(w, r, err)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: linkCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: s.secure(r), SameSite: http.SameSiteStrictMode})
	s.record(r, e)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// notSignedIn refuses a link to a browser signed in already: using it
// would switch the sign-in behind the person's back.
func (s *Server) notSignedIn(r *http.Request) error {
	if v := s.viewer(r); v.signedIn() {
		return &httpError{http.StatusConflict, "You are signed in as " + v.Email + ": sign out first, then open this link again."}
	}
	return nil
}

// renderLink shows a link's form with its form token (the browser's, if
// it has one, so that two tabs do not invalidate each other).
func (s *Server) renderLink(w http.ResponseWriter, r *http.Request, kind string, status int, lv views.LinkView) {
	lv.Invite = kind == store.LinkInvite
	lv.Action = "/" + kind + "/" + r.PathValue("token")
	lv.CSRF = randomToken()
	if c, err := r.Cookie(linkCookie); err == nil && len(c.Value) == len(lv.CSRF) {
		lv.CSRF = c.Value
	}
	http.SetCookie(w, &http.Cookie{Name: linkCookie, Value: lv.CSRF, Path: "/", MaxAge: 3600,
		HttpOnly: true, Secure: s.secure(r), SameSite: http.SameSiteStrictMode})
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "same-origin") // the token is in the URL; no-referrer would make the form's POST "Origin: null", refused by checkOrigin
	w.WriteHeader(status)
	_ = views.LinkPage(lv).Render(r.Context(), w)
}

// linkPath says whether p is an invitation or reset link's page, which
// authenticate lets through signed out.
func linkPath(p string) bool {
	return strings.HasPrefix(p, "/invite/") || strings.HasPrefix(p, "/reset/")
}
