package server

import (
	"context"
	"errors"
	"net/http"

	"parley/accounts"
	"parley/audit"
	"parley/store"
	"parley/views"
)

// handleAccount is a person's own account page.
func (s *Server) handleAccount() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		av := views.AccountView{}
		if r.URL.Query().Get("changed") == "password" {
			av.Notice = "Your password is changed: every other sign-in of yours has ended."
		}
		s.renderAccount(w, r, http.StatusOK, av)
	})
}

// handleAccountName changes the name the person is shown by.
func (s *Server) handleAccountName() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := s.accounts().Rename(r.Context(), s.viewer(r).ID, r.PostFormValue("name"))
		if bad := badRequestMsg(err); bad != "" {
			s.renderAccount(w, r, http.StatusBadRequest, views.AccountView{NameError: bad})
			return
		}
		if err != nil {
			s.fail(w, r, err)
			return
		}
		http.Redirect(w, r, "/account", http.StatusSeeOther)
	})
}

// handleAccountPassword changes the password, the current one required.
// Every sign-in ends (store.SetPassword); this browser is signed in anew.
func (s *Server) handleAccountPassword() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := s.viewer(r)
		var err error
		// The check of the current password takes a worker of the sign-in
		// pool: a stolen cookie cannot turn it into a fast oracle.
		if perr := s.lim.bcrypt.Do(r.Context(), func() {
			err = s.accounts().ChangePassword(r.Context(), v.ID, r.PostFormValue("current"), r.PostFormValue("password"))
		}); perr != nil {
			err = perr
		}
		if bad := badRequestMsg(err); bad != "" {
			s.renderAccount(w, r, http.StatusBadRequest, views.AccountView{PasswordError: bad})
			return
		}
		if err == nil {
			err = s.startSession(w, r, storeUserOf(v), clientIP(r))
		}
		if err != nil {
			s.fail(w, r, err)
			return
		}
		s.record(r, audit.Entry{Action: accounts.ActionPasswordChange, Target: v.Email})
		s.stops.AccessChanged(r.Context()) // the other sign-ins' sockets close now
		http.Redirect(w, r, "/account?changed=password", http.StatusSeeOther)
	})
}

// handleSignOutEverywhere ends every sign-in of the person, this one too.
func (s *Server) handleSignOutEverywhere() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := s.viewer(r)
		if err := s.st.RevokeAuthSessionsOf(r.Context(), v.ID); err != nil {
			s.fail(w, r, err)
			return
		}
		s.record(r, audit.Entry{Action: accounts.ActionSignOutEverywhere, Target: v.Email})
		s.stops.AccessChanged(r.Context())
		http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1,
			HttpOnly: true, Secure: s.secure(r), SameSite: http.SameSiteLaxMode})
		http.Redirect(w, r, "/login", http.StatusSeeOther)
	})
}

// badRequestMsg is the sentence of a refusal the person can fix, or "".
func badRequestMsg(err error) string {
	var he *httpError
	if errors.As(refused(err), &he) && he.status == http.StatusBadRequest {
		return he.msg
	}
	return ""
}

func (s *Server) renderAccount(w http.ResponseWriter, r *http.Request, status int, av views.AccountView) {
	v := s.viewer(r)
	u, err := s.st.UserByID(r.Context(), v.ID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	av.Name, av.Email, av.Admin, av.Notifications = u.Name, u.Email, u.IsAdmin, s.reach != nil
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_ = views.AccountPage(av).Render(r.Context(), w)
}

// storeUserOf is the viewer as startSession needs it (id and email).
func storeUserOf(v viewer) store.User { return store.User{ID: v.ID, Email: v.Email, Name: v.Name} }

var errDeactivated = &httpError{http.StatusForbidden, "This account is deactivated: ask an admin to reactivate it."}

// refuseDeactivated refuses a sign-in of a deactivated account (after its
// password was checked, so it tells nothing to someone without it).
func (s *Server) refuseDeactivated(ctx context.Context, userID int64) error {
	off, err := s.st.UserDeactivated(ctx, userID)
	if err != nil {
		return err
	}
	if off {
		return errDeactivated
	}
	return nil
}

// actorActive refuses whatever a deactivated account does through the act
// service: the pages, MCP, the CLI's remote answers, and the answer links
// of push, e-mail and Slack, which carry no sign-in. An unknown account
// (0, or deleted) is left to the access checks that follow.
func (s *Server) actorActive(ctx context.Context, userID int64) error {
	if userID == 0 {
		return nil
	}
	err := s.refuseDeactivated(ctx, userID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}
