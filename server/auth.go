package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"parley/runner"
	"parley/store"
	"parley/views"
)

// viewer is who makes a request: the user of the request's sign-in cookie,
// or the zero viewer (ID 0) when there is none.
type viewer struct {
	ID    int64
	Name  string // shown to others and recorded as "by" on prompts, answers and stops
	Email string
	Admin bool
	csrf  string // the sign-in's CSRF token
	token []byte // SHA-256 of the sign-in cookie's token
}

// author is the viewer as the sender of a turn.
func (v viewer) author() runner.Author { return runner.Author{Name: v.Name, ID: v.ID} }

func (v viewer) signedIn() bool { return v.ID != 0 }

// action is what a request wants to do with a session or project.
type action int

const (
	actView   action = iota // see the project, its sessions and asks (viewer)
	actPrompt               // start sessions, prompt, rename/archive sessions (member)
	actAnswer               // answer asks (member)
	actStop                 // stop a turn (member)
	actManage               // settings, members, rename/archive/delete the project (owner)
)

// Roles of a project member.
const (
	roleOwner  = "owner"
	roleMember = "member"
	roleViewer = "viewer"
)

// can reports whether role (or an admin) may do act.
func can(role string, admin bool, act action) bool {
	if admin {
		return true
	}
	switch role {
	case roleOwner:
		return true
	case roleMember:
		return act != actManage
	case roleViewer:
		return act == actView
	}
	return false
}

// sessionCookie names the sign-in cookie.
const sessionCookie = "parley_session"

type viewerKey struct{}

// viewer returns who makes the request, as authenticate found at its start.
func (s *Server) viewer(r *http.Request) viewer {
	v, _ := r.Context().Value(viewerKey{}).(viewer)
	return v
}

// lookupViewer reads the sign-in cookie and loads its user from Postgres,
// so a sign-in revoked or expired since is refused at once.
func (s *Server) lookupViewer(ctx context.Context, r *http.Request) (viewer, error) {
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" || len(c.Value) > 128 {
		return viewer{}, nil
	}
	h := tokenHash(c.Value)
	a, err := s.st.AuthSessionByToken(ctx, h)
	if errors.Is(err, store.ErrNotFound) {
		return viewer{}, nil
	}
	if err != nil {
		return viewer{}, err
	}
	return viewer{ID: a.ID, Name: a.DisplayName(), Email: a.Email, Admin: a.IsAdmin, csrf: a.CSRFToken, token: h}, nil
}

func tokenHash(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// authenticate finds the request's viewer and sends anyone not signed in
// to the login page; only the login page, static files and the health
// check are public.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		// /mcp authenticates each request by its API token (mcpapi), never by cookie;
		// /metrics by its own token or loopback.
		if strings.HasPrefix(p, "/static/") || p == "/healthz" || p == "/readyz" || p == "/metrics" || p == "/mcp" {
			next.ServeHTTP(w, r)
			return
		}
		v, err := s.lookupViewer(r.Context(), r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if !v.signedIn() && p != "/login" && !linkPath(p) {
			s.needLogin(w, r)
			return
		}
		ctx := context.WithValue(r.Context(), viewerKey{}, v)
		if v.signedIn() {
			ctx = views.WithUser(ctx, views.User{ID: v.ID, Name: v.Name, Email: v.Email, Admin: v.Admin, CSRF: v.csrf})
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// needLogin answers a request without a sign-in: a page load goes to the
// login page and comes back after; anything else gets 401.
func (s *Server) needLogin(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && r.Header.Get("HX-Request") == "" && r.Header.Get("Upgrade") == "" {
		http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
		return
	}
	s.fail(w, r, errSignedOut)
}

// authorizeSession is the single authorization point for session requests:
// it loads the session and checks that the viewer may do act in its
// project. The viewer is read afresh from the sign-in cookie, so a
// long-lived WebSocket loses its rights the moment its sign-in is revoked
// or its membership changes. A session outside the viewer's projects is
// reported as not found; a role too low for act is forbidden.
func (s *Server) authorizeSession(ctx context.Context, r *http.Request, id string, act action) (store.Session, viewer, error) {
	v, err := s.lookupViewer(ctx, r)
	if err != nil {
		return store.Session{}, v, err
	}
	if !v.signedIn() {
		return store.Session{}, v, errSignedOut
	}
	sess, err := s.authorizeSessionFor(ctx, v, id, act)
	return sess, v, err
}

// authorizeSessionFor is authorizeSession for a viewer already known (an
// API token's user): the same checks, the same errors.
func (s *Server) authorizeSessionFor(ctx context.Context, v viewer, id string, act action) (store.Session, error) {
	if !validUUID(id) {
		return store.Session{}, errNotFound
	}
	sess, err := s.st.GetSession(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return store.Session{}, s.sessionGone(ctx, v, id) // deleted: say so (session_delete.go)
	}
	if err != nil {
		return store.Session{}, err
	}
	if _, err := s.checkAccess(ctx, v, sess.ProjectID, act); err != nil {
		return store.Session{}, err
	}
	return sess, nil
}

// checkAccess checks that v may do act in the project and returns v's role
// there ("" for an admin who is not a member).
func (s *Server) checkAccess(ctx context.Context, v viewer, projectID int64, act action) (string, error) {
	a, err := s.st.ProjectAccess(ctx, projectID, v.ID)
	if errors.Is(err, store.ErrNotFound) {
		return "", errNotFound
	}
	if err != nil {
		return "", err
	}
	switch {
	case a.Role == "" && !v.Admin:
		return "", errNotFound
	case !can(a.Role, v.Admin, act):
		return a.Role, forbiddenFor(act)
	case a.Archived && act != actView && act != actManage:
		return a.Role, errArchived
	}
	return a.Role, nil
}

// authorizeProjectAs loads the project named by id (a path value) if the
// request's viewer may do act in it.
func (s *Server) authorizeProjectAs(ctx context.Context, r *http.Request, id string, act action) (store.Project, viewer, string, error) {
	v := s.viewer(r)
	pid, err := strconv.ParseInt(id, 10, 64)
	if err != nil || pid <= 0 {
		return store.Project{}, v, "", errNotFound
	}
	role, err := s.checkAccess(ctx, v, pid, act)
	if err != nil {
		return store.Project{}, v, role, err
	}
	p, err := s.st.GetProject(ctx, pid)
	if errors.Is(err, store.ErrNotFound) {
		err = errNotFound
	}
	return p, v, role, err
}

// projectsOf returns the ids of the projects the viewer may see (its
// memberships; every project for an admin): every list across projects
// (the inbox) goes through it.
func (s *Server) projectsOf(ctx context.Context, v viewer) ([]int64, error) {
	if !v.signedIn() {
		return nil, nil
	}
	return s.st.ProjectIDsFor(ctx, v.ID, v.Admin)
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

// sameOrigin accepts requests without an Origin (non-browser clients, which
// need the sign-in cookie anyway) and those whose Origin host is the
// request's host. Browsers send Origin on every WebSocket handshake.
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

// randomToken returns 32 random bytes, base64url-encoded.
func randomToken() string {
	b := make([]byte, 32)
	rand.Read(b) // never fails: since Go 1.24 it crashes the program instead
	return base64.RawURLEncoding.EncodeToString(b)
}
