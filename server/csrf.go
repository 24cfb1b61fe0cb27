package server

import (
	"crypto/subtle"
	"net/http"
)

// CSRF: every state-changing HTTP request of a signed-in browser carries
// its sign-in's CSRF token, as the form field csrfField (each form renders
// it; static/csrf.js adds it to any POST form that lacks it) or the header
// csrfHeader (htmx sends it from hx-headers on <body>). Forms sent over the
// WebSocket need none: the upgrade checks the Origin, and a cross-site page
// cannot open a socket with our Origin. The login form, which has no
// sign-in yet, is checked by handleLogin against its own cookie.
const (
	csrfField  = "csrf"
	csrfHeader = "X-CSRF-Token"
	// maxFormBytes bounds a form body read to find its token.
	maxFormBytes = 1 << 20
)

// checkCSRF refuses a state-changing request whose token is missing or
// wrong, before any handler runs: a forged request changes nothing.
func (s *Server) checkCSRF(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			next.ServeHTTP(w, r)
			return
		}
		v := s.viewer(r)
		if !v.signedIn() || r.URL.Path == "/login" {
			next.ServeHTTP(w, r)
			return
		}
		got := r.Header.Get(csrfHeader)
		if got == "" {
			r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
			got = r.PostFormValue(csrfField)
		}
		if !tokensEqual(got, v.csrf) {
			s.fail(w, r, errCSRF)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func tokensEqual(got, want string) bool {
	return got != "" && want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}
