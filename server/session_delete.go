package server

import (
	"context"
	"errors"
	"net/http"
	"os"
	"strconv"
	"strings"

	"parley/audit"
	"parley/hub"
	"parley/launch"
	"parley/sessiondelete"
	"parley/store"
	"parley/views"
)

// Deleting sessions and retention (package sessiondelete): the owner's
// confirmation page and delete, and a project's retention setting.

// sessionDeleteRoutes are a session's delete and a project's retention.
func (s *Server) sessionDeleteRoutes(mux *http.ServeMux) {
	mux.Handle("GET /sessions/{id}/delete", s.handleSessionDeletePage())
	mux.Handle("POST /sessions/{id}/delete", s.handleSessionDelete())
	mux.Handle("POST /projects/{id}/settings/retention", s.handleRetentionSave())
}

// SessionDeleter deletes sessions through this server's replicas, git and
// data dir; serve runs its retention sweep (Run).
func (s *Server) SessionDeleter() *sessiondelete.Deleter {
	return sessiondelete.New(s.st, s.stops, deleteDisk{s}, s.log)
}

// handleSessionDeletePage asks an owner to confirm a session's delete,
// naming its worktree, branch and what goes with it.
func (s *Server) handleSessionDeletePage() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sess, _, err := s.authorizeSession(r.Context(), r, r.PathValue("id"), actManage)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		v, err := s.sessionDeleteView(r.Context(), sess)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = views.SessionDeletePage(v).Render(r.Context(), w)
	})
}

// handleSessionDelete deletes a session for an owner. A second delete of
// it (a double click, a page reloaded) says it is gone, and finishes its
// cleanup if that had not.
func (s *Server) handleSessionDelete() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		_, v, err := s.authorizeSession(r.Context(), r, id, actManage)
		var gone *sessionGoneError
		if errors.As(err, &gone) {
			_, err = s.checkAccess(r.Context(), v, gone.tomb.ProjectID, actManage)
		}
		if err != nil {
			s.fail(w, r, err)
			return
		}
		res, err := s.SessionDeleter().Delete(r.Context(), id, sessiondelete.Actor{ID: v.ID, Name: v.Name, From: clientIP(r), Surface: audit.Page})
		if errors.Is(err, sessiondelete.ErrBusy) {
			err = &httpError{http.StatusConflict, "Claude's process for this session did not end in time; nothing was deleted. Try again in a moment."}
		}
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if !res.Already {
			// Its asks leave the open inboxes here (a poke: each re-reads).
			s.hub.Publish(hub.ProjectTopic(res.Session.ProjectID), hub.Frame{})
		}
		dv := views.SessionDeletedView{Title: orText(res.Session.Title, res.Session.ID), ProjectID: res.Session.ProjectID, Already: res.Already}
		if res.Cleanup != nil {
			dv.Cleanup = res.Cleanup.Error() + "."
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = views.SessionDeletedPage(dv).Render(r.Context(), w)
	})
}

// sessionDeleteView is what the confirmation page names.
func (s *Server) sessionDeleteView(ctx context.Context, sess store.Session) (views.SessionDeleteView, error) {
	p, err := s.st.GetProject(ctx, sess.ProjectID)
	if err != nil {
		return views.SessionDeleteView{}, err
	}
	f, err := s.st.SessionFootprintOf(ctx, sess.ID)
	if err != nil {
		return views.SessionDeleteView{}, err
	}
	wt, err := s.st.SessionWorktree(ctx, sess.ID)
	if err != nil {
		return views.SessionDeleteView{}, err
	}
	v := views.SessionDeleteView{ID: sess.ID, Title: sess.Title, ProjectID: p.ID, ProjectName: p.Name,
		Events: f.Events, Asks: f.Asks, PendingAsks: f.PendingAsks, Runs: f.Runs,
		Running:       f.Running || sess.Status == "running" || sess.Status == "waiting",
		ConfigDirNote: "(" + deleteDisk{s}.ConfigDir(p) + "/projects/…/" + sess.ClaudeSessionID + ".jsonl)"}
	if wt.Branch != "" {
		v.Branch, v.BranchMerged = wt.Branch, wt.State == store.WorktreeMerged
		if wt.State != store.WorktreeDiscarded {
			v.WorktreeDir = launch.WorktreeDir(s.cfg.DataDir, p.ID, sess.ID)
		}
	}
	return v, nil
}

// sessionGoneError is the answer about a deleted session to someone who
// may see its project: a 404 that says what happened.
type sessionGoneError struct {
	he   *httpError
	tomb store.DeletedSession
}

func (e *sessionGoneError) Error() string { return e.he.msg }
func (e *sessionGoneError) Unwrap() error { return e.he }

// reasonDeleted closes the sockets of a deleted session (closeRemoved).
const reasonDeleted = "This session was deleted."

// sessionGone is authorizeSession's answer for a session that is not
// there: a sessionGoneError when it was deleted and v may see its project,
// else errNotFound (nothing said to others about what existed).
func (s *Server) sessionGone(ctx context.Context, v viewer, id string) error {
	tomb, err := s.st.DeletedSessionOf(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return errNotFound
	}
	if err != nil {
		return err
	}
	if _, err := s.checkAccess(ctx, v, tomb.ProjectID, actView); err != nil {
		return errNotFound
	}
	by := "by " + orText(tomb.DeletedBy, "an owner")
	if tomb.Reason == store.DeletedByRetention {
		by = "by the project's retention setting, after it was idle"
	}
	msg := "This session was deleted on " + tomb.DeletedAt.UTC().Format("2 Jan 2006 at 15:04 UTC") + " " + by +
		": its transcript, worktree and branch are gone."
	return &sessionGoneError{he: &httpError{http.StatusNotFound, msg}, tomb: tomb}
}

// isSessionGone says err is a deleted session's.
func isSessionGone(err error) bool {
	var g *sessionGoneError
	return errors.As(err, &g)
}

// handleRetentionSave stores how long a project's sessions may stay idle.
func (s *Server) handleRetentionSave() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, v, _, err := s.authorizeProjectAs(r.Context(), r, r.PathValue("id"), actManage)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		raw := strings.TrimSpace(r.PostFormValue("retention_days"))
		days, ok := parseRetention(raw)
		if !ok {
			sv := s.settingsView(p, v, formOf(p))
			sv.Retention = &views.RetentionForm{Days: raw, Error: "A whole number of days from 1 to 3650, or empty to keep sessions."}
			s.renderSettings(w, r, http.StatusBadRequest, sv)
			return
		}
		if err := s.st.SetProjectRetention(r.Context(), p.ID, days); err != nil {
			s.fail(w, r, err)
			return
		}
		s.record(r, audit.Entry{Action: audit.ProjectSettings, ProjectID: p.ID, Target: "retention", Detail: map[string]any{"idle_days": days}})
		http.Redirect(w, r, settingsPath(p.ID)+"?saved=retention#retention", http.StatusSeeOther)
	})
}

// parseRetention reads the retention form: "" is off (0).
func parseRetention(raw string) (int, bool) {
	if raw == "" {
		return 0, true
	}
	n, err := strconv.Atoi(raw)
	return n, err == nil && n >= 1 && n <= 3650
}

// retentionForm is the settings page's retention form as stored.
func (s *Server) retentionForm(r *http.Request, projectID int64) (*views.RetentionForm, error) {
	days, err := s.st.ProjectRetention(r.Context(), projectID)
	if err != nil {
		return nil, err
	}
	f := &views.RetentionForm{Saved: r.URL.Query().Get("saved") == "retention"}
	if days > 0 {
		f.Days = strconv.Itoa(days)
	}
	return f, nil
}

// deleteDisk is sessiondelete.Disk for this server: git as the project's
// runs (gitOf), the data dir's paths.
type deleteDisk struct{ s *Server }

// RemoveWorktree removes the session's worktree, if there is one, and its
// branch (parley/<session> when none was recorded: a first run may have
// made it as the delete began).
func (d deleteDisk) RemoveWorktree(ctx context.Context, p store.Project, sessionID, branch string) error {
	dir := launch.WorktreeDir(d.s.cfg.DataDir, p.ID, sessionID)
	if branch == "" {
		if _, err := os.Lstat(dir); err != nil {
			return nil // never had one
		}
		branch = launch.BranchFor(sessionID)
	}
	return launch.RemoveTree(ctx, d.s.gitOf(p), launch.WorkspaceDir(d.s.cfg.DataDir, p), dir, branch)
}

// ConfigDir is the CLAUDE_CONFIG_DIR of p's runs.
func (d deleteDisk) ConfigDir(p store.Project) string {
	if d.s.cfg.ClaudeConfigDir != "" {
		return d.s.cfg.ClaudeConfigDir
	}
	return launch.ConfigDir(d.s.cfg.DataDir, p.ID)
}
