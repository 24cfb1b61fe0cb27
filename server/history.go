package server

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"parley/audit"
	"parley/store"
	"parley/views"
)

// historyLimit bounds one page of a project's history.
const historyLimit = 200

func (s *Server) handleHistory() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := s.authorizeProject(r.Context(), r, r.PathValue("id"))
		if err != nil {
			s.fail(w, r, err)
			return
		}
		q := strings.TrimSpace(r.URL.Query().Get("q"))
		withArchived := r.URL.Query().Get("archived") == "1"
		hits, err := s.st.SearchSessions(r.Context(), p.ID, q, withArchived, historyLimit)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		h := views.History{ProjectID: p.ID, Project: p.Name, Query: q, ShowArchived: withArchived}
		for _, x := range hits {
			h.Rows = append(h.Rows, views.HistoryRow{ID: x.ID, Title: x.Title, Status: x.Status,
				CreatedBy: x.CreatedBy, Updated: x.UpdatedAt.Format("2006-01-02 15:04"), Archived: x.ArchivedAt != nil,
				CostUSD: x.TotalCostUSD, Turns: x.NumTurns, Snippet: snippetParts(x.Snippet)})
		}
		render(w, r, views.HistoryPage(h))
	})
}

func (s *Server) handleSessionRename() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sess, _, err := s.authorizeSession(r.Context(), r, r.PathValue("id"), actPrompt)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
		t := strings.TrimSpace(r.PostFormValue("title"))
		if t == "" || utf8.RuneCountInString(t) > 200 || !utf8.ValidString(t) {
			s.fail(w, r, badRequest("A title is 1 to 200 characters of text."))
			return
		}
		if err := s.st.RenameSession(r.Context(), sess.ID, t); err != nil {
			s.fail(w, r, err)
			return
		}
		http.Redirect(w, r, historyPath(sess.ProjectID), http.StatusSeeOther)
	})
}

func (s *Server) handleSessionArchive() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sess, _, err := s.authorizeSession(r.Context(), r, r.PathValue("id"), actPrompt)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		archive := r.PostFormValue("archived") != "0"
		if err := s.st.ArchiveSession(r.Context(), sess.ID, archive); err != nil {
			s.fail(w, r, err)
			return
		}
		s.record(r, audit.Entry{Action: audit.SessionArchive, ProjectID: sess.ProjectID, SessionID: sess.ID, Target: sess.Title, Detail: map[string]any{"archived": archive}})
		if archive {
			s.stops.StopSession(r.Context(), sess.ID) // an archived session keeps no process, on any replica
		}
		http.Redirect(w, r, historyPath(sess.ProjectID), http.StatusSeeOther)
	})
}

func (s *Server) handleExportJSON() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sess, evs, err := s.exportData(r.Context(), r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		attachment(w, sess, "json", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(exportJSON(sess, evs))
	})
}

func (s *Server) handleExportMarkdown() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sess, evs, err := s.exportData(r.Context(), r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		attachment(w, sess, "md", "text/markdown; charset=utf-8")
		_, _ = w.Write([]byte(exportMarkdownAt(sess, evs, s.siteURL(r))))
	})
}

// exportData loads a session and its whole event log for an export.
func (s *Server) exportData(ctx context.Context, r *http.Request) (store.Session, []store.Event, error) {
	sess, _, err := s.authorizeSession(ctx, r, r.PathValue("id"), actView)
	if err != nil {
		return sess, nil, err
	}
	evs, err := s.st.EventsAfter(ctx, sess.ID, 0, 0)
	return sess, evs, err
}

// authorizeProject loads a project the viewer is a member of; any other
// project is reported as not found.
func (s *Server) authorizeProject(ctx context.Context, r *http.Request, id string) (store.Project, error) {
	pid, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return store.Project{}, errNotFound
	}
	mine, err := s.projectsOf(ctx, s.viewer(r))
	if err != nil {
		return store.Project{}, err
	}
	if !slices.Contains(mine, pid) {
		return store.Project{}, errNotFound
	}
	return s.st.GetProject(ctx, pid)
}

func historyPath(projectID int64) string {
	return "/projects/" + strconv.FormatInt(projectID, 10) + "/history"
}

// attachment sets the headers of a download named after the session.
func attachment(w http.ResponseWriter, sess store.Session, ext, contentType string) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Disposition", `attachment; filename="`+slug(sess.Title)+"-"+sess.ID[:8]+"."+ext+`"`)
	w.Header().Set("X-Content-Type-Options", "nosniff")
}

// slug keeps the letters and digits of a title, joined by dashes.
func slug(title string) string {
	f := strings.FieldsFunc(strings.ToLower(title), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	})
	s := strings.Join(f, "-")
	if len(s) > 48 {
		s = strings.TrimRight(s[:48], "-")
	}
	if s == "" {
		return "session"
	}
	return s
}

// snippetParts splits a marked search snippet into plain and matched text.
func snippetParts(s string) []views.SnippetPart {
	var out []views.SnippetPart
	for s != "" {
		before, rest, found := strings.Cut(s, store.SnippetStart)
		if before != "" {
			out = append(out, views.SnippetPart{Text: before})
		}
		if !found {
			break
		}
		hit, after, _ := strings.Cut(rest, store.SnippetStop)
		out = append(out, views.SnippetPart{Text: hit, Hit: true})
		s = after
	}
	return out
}
