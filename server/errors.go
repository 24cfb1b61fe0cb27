package server

import (
	"errors"
	"net/http"

	"parley/views"
)

// httpError is an error with the status and the sentence a user sees.
type httpError struct {
	status int
	msg    string
}

func (e *httpError) Error() string { return e.msg }

var (
	errNotFound  = &httpError{http.StatusNotFound, "There is nothing here, or you do not have access to it."}
	errForbidden = &httpError{http.StatusForbidden, "This request was refused: it did not come from a Parley page."}
)

var (
	errCSRF      = &httpError{http.StatusForbidden, "This form has expired or did not come from a Parley page: reload the page and try again."}
	errSignedOut = &httpError{http.StatusUnauthorized, "You are not signed in, or your sign-in has ended: sign in again."}
	errArchived  = &httpError{http.StatusForbidden, "This project is archived: its sessions can be read but not continued. An owner can restore it in the settings."}
)

// forbiddenFor is the refusal of act to a member whose role is too low.
func forbiddenFor(act action) error {
	switch act {
	case actManage:
		return &httpError{http.StatusForbidden, "Only the project's owners can change its settings and members."}
	case actAnswer:
		return &httpError{http.StatusForbidden, "Viewers can watch this project but not answer Claude; ask an owner to make you a member."}
	}
	return &httpError{http.StatusForbidden, "Viewers can watch this project but not prompt or stop Claude; ask an owner to make you a member."}
}

func badRequest(msg string) error { return &httpError{http.StatusBadRequest, msg} }

// fail is the one place that maps errors to responses and logs them.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	status, msg := http.StatusInternalServerError, "Something went wrong on the server; try again, and tell your admin if it keeps happening."
	var he *httpError
	if errors.As(err, &he) {
		status, msg = he.status, he.msg
	} else if databaseAway(err) { // fault_errors.go
		status, msg = http.StatusServiceUnavailable, msgDatabaseAway
		s.log.Warn("request failed: the database is away", "method", r.Method, "path", r.URL.Path, "err", err)
	} else {
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	if r.Header.Get("HX-Request") != "" || r.Header.Get("Accept") == "application/json" {
		http.Error(w, msg, status)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_ = views.ErrorPage(status, msg).Render(r.Context(), w)
}
