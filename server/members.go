package server

import (
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"parley/audit"
	"parley/store"
)

// handleMemberAdd adds a user, by email, to the project with a role.
func (s *Server) handleMemberAdd() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, v, _, err := s.authorizeProjectAs(r.Context(), r, r.PathValue("id"), actManage)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		role := r.PostFormValue("role")
		u, err := s.st.UserByEmail(r.Context(), strings.TrimSpace(r.PostFormValue("email")))
		switch {
		case !validRole(role):
			err = badRequest("Pick a role: owner, member or viewer.")
		case errors.Is(err, store.ErrNotFound):
			s.inviteMember(w, r, p, v, role) // members_invite.go: no account yet, so an invitation into the project
			return
		case err == nil:
			err = s.st.SetMember(r.Context(), p.ID, u.ID, role)
		}
		s.recordOK(err, r, audit.Entry{Action: audit.MemberAdd, ProjectID: p.ID, Target: u.Email, Detail: map[string]any{"user_id": u.ID, "role": role}})
		s.afterMemberChange(w, r, p, v, err)
	})
}

// handleMemberRole changes a member's role.
func (s *Server) handleMemberRole() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, v, _, err := s.authorizeProjectAs(r.Context(), r, r.PathValue("id"), actManage)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		uid, role := memberID(r), r.PostFormValue("role")
		if !validRole(role) {
			err = badRequest("Pick a role: owner, member or viewer.")
		} else if err = s.keepAnOwner(r, p.ID, uid, role); err == nil {
			err = s.changeMember(r, p.ID, uid, func() error { return s.st.SetMember(r.Context(), p.ID, uid, role) })
		}
		s.recordOK(err, r, audit.Entry{Action: audit.RoleChange, ProjectID: p.ID, Target: r.PathValue("uid"), Detail: map[string]any{"user_id": uid, "role": role}})
		s.afterMemberChange(w, r, p, v, err)
	})
}

// handleMemberRemove takes a member out of the project.
func (s *Server) handleMemberRemove() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, v, _, err := s.authorizeProjectAs(r.Context(), r, r.PathValue("id"), actManage)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		uid := memberID(r)
		if err = s.keepAnOwner(r, p.ID, uid, ""); err == nil {
			err = s.changeMember(r, p.ID, uid, func() error { return s.st.RemoveMember(r.Context(), p.ID, uid) })
		}
		s.recordOK(err, r, audit.Entry{Action: audit.MemberRemove, ProjectID: p.ID, Target: r.PathValue("uid"), Detail: map[string]any{"user_id": uid}})
		s.afterMemberChange(w, r, p, v, err)
	})
}

// changeMember applies change to an existing member of the project.
func (s *Server) changeMember(r *http.Request, projectID, uid int64, change func() error) error {
	if _, err := s.st.MemberRole(r.Context(), projectID, uid); errors.Is(err, store.ErrNotFound) {
		return badRequest("That user is not a member of this project.")
	} else if err != nil {
		return err
	}
	return change()
}

// keepAnOwner refuses to demote or remove the project's last owner.
func (s *Server) keepAnOwner(r *http.Request, projectID, uid int64, newRole string) error {
	if newRole == roleOwner {
		return nil
	}
	members, err := s.st.Members(r.Context(), projectID)
	if err != nil {
		return err
	}
	owners := slices.DeleteFunc(members, func(m store.Member) bool { return m.Role != roleOwner })
	if len(owners) == 1 && owners[0].UserID == uid {
		return badRequest("A project keeps at least one owner: make someone else owner first.")
	}
	return nil
}

// afterMemberChange shows the settings page again: with the error next to
// the members when err is a user's mistake.
func (s *Server) afterMemberChange(w http.ResponseWriter, r *http.Request, p store.Project, v viewer, err error) {
	var he *httpError
	if errors.As(err, &he) && he.status == http.StatusBadRequest {
		sv := s.settingsView(p, v, formOf(p))
		sv.MemberError = he.msg
		s.renderSettings(w, r, http.StatusBadRequest, sv)
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.stops.AccessChanged(r.Context()) // sockets of who lost access close now, on every replica
	s.warm.Recheck()
	http.Redirect(w, r, settingsPath(p.ID), http.StatusSeeOther)
}

func memberID(r *http.Request) int64 {
	id, _ := strconv.ParseInt(r.PathValue("uid"), 10, 64)
	return id
}

func validRole(role string) bool {
	return role == roleOwner || role == roleMember || role == roleViewer
}
