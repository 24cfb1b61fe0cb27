package server

import (
	"context"
	"errors"
	"net/http"
	"net/url"

	"parley/store"
)

// viewer is who makes a request. Until accounts land everyone is the one
// local user; every session request still goes through authorizeSession so
// accounts and roles slot in at one place.
type viewer struct {
	Name string
}

// action is what a request wants to do with a session.
type action int

const (
	actView action = iota
	actPrompt
	actAnswer
	actStop
)

func (s *Server) viewer(r *http.Request) viewer { return viewer{Name: "you"} }

// authorizeSession is the single authorization point for session requests:
// it loads the session and checks that the viewer may do act in its
// project. A session outside the viewer's projects is reported as not found.
func (s *Server) authorizeSession(ctx context.Context, r *http.Request, id string, act action) (store.Session, viewer, error) {
	v := s.viewer(r)
	if !validUUID(id) {
		return store.Session{}, v, errNotFound
	}
	sess, err := s.st.GetSession(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return store.Session{}, v, errNotFound
	}
	if err != nil {
		return store.Session{}, v, err
	}
	if sess.ProjectID != s.project.ID {
		return store.Session{}, v, errNotFound
	}
	_ = act // every local user may do everything until roles land
	return sess, v, nil
}

// checkOrigin refuses state-changing browser requests from other origins.
func (s *Server) checkOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead && !sameOrigin(r) {
			s.fail(w, r, errForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// sameOrigin accepts requests without an Origin (non-browser clients) and
// those whose Origin host is the request's host.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}

func validUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if c != '-' {
				return false
			}
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f', c >= 'A' && c <= 'F':
		default:
			return false
		}
	}
	return true
}

// projectsOf returns the ids of the projects the viewer is a member of:
// every list across projects (the inbox) goes through it.
func (s *Server) projectsOf(ctx context.Context, v viewer) ([]int64, error) {
	return []int64{s.project.ID}, nil
}
