package server

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"parley/audit"
	"parley/views"
)

// auditActions are the actions the page's filter offers.
var auditActions = []string{audit.SignIn, audit.SignInFailed, audit.Invite, audit.MemberAdd, audit.RoleChange,
	audit.MemberRemove, audit.AdminChange, audit.Deactivate, audit.ProjectSettings, audit.ProjectDelete,
	audit.TokenCreate, audit.TokenRevoke, audit.AskAnswer, audit.AllowAlways, audit.WorktreeMerge,
	audit.WorktreeDiscard, audit.SessionArchive, audit.SessionDelete, audit.UserAdd, audit.UserRemove, audit.PasswordSet}

// handleAudit is the audit trail page: admins see every row, project
// owners their projects' rows, anyone else is refused.
func (s *Server) handleAudit() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, form, err := s.auditFilter(r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		rows, err := s.auditLog().List(r.Context(), f)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		av := views.AuditView{Filter: form, Actions: auditActions, Scope: "Every project's rows, and sign-ins and tokens.",
			ExportURL: "/audit/export?" + filterQuery(form, 0)}
		if !s.viewer(r).Admin {
			av.Scope = "The rows of the projects you own."
		}
		for _, row := range rows {
			av.Rows = append(av.Rows, auditRowView(row))
		}
		if len(rows) == 200 {
			av.MoreURL = "/audit?" + filterQuery(form, rows[len(rows)-1].ID)
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = views.AuditPage(av).Render(r.Context(), w)
	})
}

// handleAuditExport writes the rows the filter selects as JSON lines.
func (s *Server) handleAuditExport() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, _, err := s.auditFilter(r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		f.BeforeID = 0
		w.Header().Set("Content-Type", "application/jsonl; charset=utf-8")
		w.Header().Set("Content-Disposition", `attachment; filename="parley-audit.jsonl"`)
		if err := s.auditLog().Export(r.Context(), f, w); err != nil {
			s.log.Error("audit export ended early", "err", err) // the status is sent already
		}
	})
}

var errAuditForbidden = &httpError{http.StatusForbidden, "Only admins and project owners can see the audit trail."}

// auditFilter is the viewer's scope narrowed by the query's filters.
func (s *Server) auditFilter(r *http.Request) (audit.Filter, views.AuditFilter, error) {
	v := s.viewer(r)
	q := r.URL.Query()
	form := views.AuditFilter{Project: strings.TrimSpace(q.Get("project")), Actor: strings.TrimSpace(q.Get("actor")),
		Action: q.Get("action"), Since: q.Get("since"), Until: q.Get("until")}
	f, err := s.auditLog().Scope(r.Context(), v.ID, v.Admin)
	if err != nil {
		return f, form, err
	}
	if !v.Admin && len(f.Projects) == 0 {
		return f, form, errAuditForbidden
	}
	f.Actor, f.Action = form.Actor, form.Action
	f.BeforeID, _ = strconv.ParseInt(q.Get("before"), 10, 64)
	if form.Project != "" {
		if f.ProjectID, err = strconv.ParseInt(form.Project, 10, 64); err != nil {
			return f, form, badRequest("The project is a number: its id, as in /projects/12.")
		}
	}
	if f.Since, err = parseDay(form.Since, 0); err == nil {
		f.Until, err = parseDay(form.Until, 24*time.Hour) // the whole last day
	}
	return f, form, err
}

// parseDay reads a YYYY-MM-DD day in UTC, plus add; empty is the zero time.
func parseDay(s string, add time.Duration) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return t, badRequest("Give days as YYYY-MM-DD, for example 2026-11-27.")
	}
	return t.Add(add), nil
}

// filterQuery is the filter form as a query string, from before (0 = the start).
func filterQuery(f views.AuditFilter, before int64) string {
	q := url.Values{}
	for k, v := range map[string]string{"project": f.Project, "actor": f.Actor, "action": f.Action, "since": f.Since, "until": f.Until} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if before > 0 {
		q.Set("before", strconv.FormatInt(before, 10))
	}
	return q.Encode()
}

func auditRowView(r audit.Row) views.AuditRow {
	v := views.AuditRow{ID: r.ID, At: r.At.UTC().Format("2006-01-02 15:04:05"), Actor: r.ActorName, From: r.Source,
		Surface: r.Surface, Action: r.Action, Session: r.SessionID, Target: r.Target, Detail: string(r.Detail)}
	if r.ProjectID != 0 {
		v.Project = strconv.FormatInt(r.ProjectID, 10)
	}
	if v.Detail == "{}" {
		v.Detail = ""
	}
	return v
}
