package server

import (
	"net/http"
	"strings"

	"parley/accounts"
	"parley/audit"
	"parley/store"
)

// inviteMember answers the add-member form for an email without an
// account: an invitation that makes the account in this project with the
// role chosen, shown on the settings page to copy (and e-mailed when SMTP
// is set up).
func (s *Server) inviteMember(w http.ResponseWriter, r *http.Request, p store.Project, v viewer, role string) {
	email := strings.TrimSpace(r.PostFormValue("email"))
	inv := accounts.Invitation{Email: email, ProjectID: p.ID, Role: role, By: v.ID, ByName: v.Name}
	l, err := s.accounts().Invite(r.Context(), inv, s.siteURL(r))
	if err != nil {
		s.afterMemberChange(w, r, p, v, refused(err))
		return
	}
	s.record(r, audit.Entry{Action: audit.Invite, ProjectID: p.ID, Target: email, Detail: map[string]any{"role": role, "mailed": l.Mailed}})
	sv := s.settingsView(p, v, formOf(p))
	sv.MemberInvite = linkView("Invitation", email, l)
	w.Header().Set("Cache-Control", "no-store")
	s.renderSettings(w, r, http.StatusOK, sv)
}
