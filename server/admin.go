package server

import (
	"errors"
	"net/http"
	"strconv"

	"parley/accounts"
	"parley/audit"
	"parley/views"
)

// accounts is the administration of people over the server's store.
func (s *Server) accounts() *accounts.Service {
	return accounts.New(s.st, accounts.Passwords{Hash: HashPassword, Match: passwordMatches}, accounts.Options{Mail: s.cfg.Mail})
}

var errAdminOnly = &httpError{http.StatusForbidden, "Only admins manage people: ask an admin."}

// siteURL is the base of the links Parley hands out: PARLEY_PUBLIC_URL, or
// the scheme and host this request came to.
func (s *Server) siteURL(r *http.Request) string {
	if s.cfg.PublicURL != "" {
		return s.cfg.PublicURL
	}
	scheme := "http"
	if s.secure(r) {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// refused maps an accounts.Refusal to the status and sentence shown.
func refused(err error) error {
	var rf *accounts.Refusal
	switch {
	case !errors.As(err, &rf):
		return err
	case rf.Gone:
		return &httpError{http.StatusGone, rf.Msg}
	}
	return badRequest(rf.Msg)
}

// adminOnly runs h for admins and refuses everyone else.
func (s *Server) adminOnly(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.viewer(r).Admin {
			s.fail(w, r, errAdminOnly)
			return
		}
		h(w, r)
	})
}

// handleAdminUsers is the users page: every account, pending invitations,
// and the forms to invite, deactivate, reactivate, make admin and reset.
func (s *Server) handleAdminUsers() http.Handler {
	return s.adminOnly(func(w http.ResponseWriter, r *http.Request) {
		s.renderAdminUsers(w, r, http.StatusOK, views.AdminUsersView{})
	})
}

// handleAdminInvite invites an email and shows the link to copy.
func (s *Server) handleAdminInvite() http.Handler {
	return s.adminOnly(func(w http.ResponseWriter, r *http.Request) {
		v := s.viewer(r)
		inv := accounts.Invitation{Email: r.PostFormValue("email"), Admin: r.PostFormValue("admin") == "1", By: v.ID, ByName: v.Name}
		l, err := s.accounts().Invite(r.Context(), inv, s.siteURL(r))
		if err != nil {
			s.adminRefused(w, r, err)
			return
		}
		s.record(r, audit.Entry{Action: audit.Invite, Target: inv.Email, Detail: map[string]any{"admin": inv.Admin, "mailed": l.Mailed}})
		w.Header().Set("Cache-Control", "no-store")
		s.renderAdminUsers(w, r, http.StatusOK, views.AdminUsersView{Link: linkView("Invitation", inv.Email, l)})
	})
}

// handleAdminActive deactivates (active false) or reactivates an account.
// Deactivating ends their sign-ins at once and has every open socket check
// its viewer now; their API tokens are refused from the next request, and
// an open MCP stream is cut within a ping period (mcpCutOff).
func (s *Server) handleAdminActive(active bool) http.Handler {
	return s.adminOnly(func(w http.ResponseWriter, r *http.Request) {
		uid := userIDOf(r)
		a, err := s.accounts().SetActive(r.Context(), s.viewer(r).ID, uid, active)
		if err != nil {
			s.adminRefused(w, r, err)
			return
		}
		action := audit.Deactivate
		if active {
			action = accounts.ActionReactivate
		}
		s.record(r, audit.Entry{Action: action, Target: a.Email, Detail: map[string]any{"user_id": uid}})
		s.stops.AccessChanged(r.Context()) // sockets of theirs close now, on every replica
		http.Redirect(w, r, "/admin/users", http.StatusSeeOther)
	})
}

// handleAdminFlag makes an account an admin (admin=1) or not.
func (s *Server) handleAdminFlag() http.Handler {
	return s.adminOnly(func(w http.ResponseWriter, r *http.Request) {
		uid, admin := userIDOf(r), r.PostFormValue("admin") == "1"
		a, err := s.accounts().SetAdmin(r.Context(), s.viewer(r).ID, uid, admin)
		if err != nil {
			s.adminRefused(w, r, err)
			return
		}
		s.record(r, audit.Entry{Action: audit.AdminChange, Target: a.Email, Detail: map[string]any{"user_id": uid, "admin": admin}})
		s.stops.AccessChanged(r.Context()) // an admin who is one no more loses other projects' pages now
		http.Redirect(w, r, "/admin/users", http.StatusSeeOther)
	})
}

// handleAdminReset makes a password-reset link and shows it to copy.
func (s *Server) handleAdminReset() http.Handler {
	return s.adminOnly(func(w http.ResponseWriter, r *http.Request) {
		l, a, err := s.accounts().SendReset(r.Context(), userIDOf(r), s.viewer(r).ID, s.siteURL(r))
		if err != nil {
			s.adminRefused(w, r, err)
			return
		}
		s.record(r, audit.Entry{Action: accounts.ActionPasswordResetSent, Target: a.Email, Detail: map[string]any{"user_id": a.ID, "mailed": l.Mailed}})
		w.Header().Set("Cache-Control", "no-store")
		s.renderAdminUsers(w, r, http.StatusOK, views.AdminUsersView{Link: linkView("Password reset", a.Email, l)})
	})
}

// adminRefused shows the users page with a refusal's sentence, or fails.
func (s *Server) adminRefused(w http.ResponseWriter, r *http.Request, err error) {
	var he *httpError
	if errors.As(refused(err), &he) && he.status == http.StatusBadRequest {
		s.renderAdminUsers(w, r, http.StatusBadRequest, views.AdminUsersView{Error: he.msg})
		return
	}
	s.fail(w, r, err)
}

func userIDOf(r *http.Request) int64 {
	id, _ := strconv.ParseInt(r.PathValue("uid"), 10, 64)
	return id
}

// linkView is a link just made, as the page shows it.
func linkView(what, email string, l accounts.Link) *views.NewLink {
	nl := &views.NewLink{What: what, Email: email, URL: l.URL, Expires: l.Expires.UTC().Format("2006-01-02 15:04 UTC"), Mailed: l.Mailed}
	if l.MailErr != nil {
		nl.MailError = "It could not be e-mailed (" + l.MailErr.Error() + "): copy it to them yourself."
	}
	return nl
}

func (s *Server) renderAdminUsers(w http.ResponseWriter, r *http.Request, status int, av views.AdminUsersView) {
	list, err := s.st.Accounts(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	invites, err := s.st.PendingInvites(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	me := s.viewer(r).ID
	for _, a := range list {
		av.Users = append(av.Users, views.AdminUserRow{ID: a.ID, Email: a.Email, Name: a.Name, Admin: a.IsAdmin,
			Deactivated: a.DeactivatedAt != nil, Self: a.ID == me, Created: a.CreatedAt.Format("2006-01-02")})
	}
	for _, l := range invites {
		av.Invites = append(av.Invites, views.AdminInviteRow{Email: l.Email, Admin: l.Admin, InProject: l.ProjectID != nil,
			Expires: l.ExpiresAt.UTC().Format("2006-01-02 15:04 UTC")})
	}
	av.CanMail = s.cfg.Mail != nil
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_ = views.AdminUsersPage(av).Render(r.Context(), w)
}
