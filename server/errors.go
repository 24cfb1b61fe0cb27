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

func badRequest(msg string) error { return &httpError{http.StatusBadRequest, msg} }

// fail is the one place that maps errors to responses and logs them.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	status, msg := http.StatusInternalServerError, "Something went wrong on the server; try again, and tell your admin if it keeps happening."
	var he *httpError
	if errors.As(err, &he) {
		status, msg = he.status, he.msg
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
