package server

import (
	"context"
	"net/http"
	"slices"
	"strings"

	"parley/launch"
	"parley/store"
	"parley/views"
)

// pageNote is what the session page says about a worktree action: done
// names one that succeeded; Error one that did not, with conflicting files.
type pageNote struct {
	Done  string
	Error string
	Files []string
}

// renderSession renders the session page with its worktree panel and
// spending line.
func (s *Server) renderSession(w http.ResponseWriter, r *http.Request, sess store.Session, note pageNote) {
	v := views.SessionView{ID: sess.ID, Title: sess.Title, Status: sess.Status, ProjectID: sess.ProjectID}
	v.QueuePlace, v.QueueLength = s.sup.QueuePlace(sess.ID)
	ctx := r.Context()
	// A viewer can watch but not prompt or stop: no Send or Stop box.
	if role, err := s.checkAccess(ctx, s.viewer(r), sess.ProjectID, actView); err == nil {
		v.ReadOnly = !can(role, s.viewer(r).Admin, actPrompt)
		v.CanDelete = can(role, s.viewer(r).Admin, actManage) // session_delete.go
	}
	if l, err := s.st.ProjectLimits(ctx, sess.ProjectID); err == nil {
		if sp, err := s.st.Spending(ctx, sess.ID); err == nil {
			v.Budget = budgetLine(l, sp)
		}
	}
	if p, err := s.st.GetProject(ctx, sess.ProjectID); err == nil {
		v.Worktree = s.worktreeView(ctx, p, sess)
	}
	if v.Worktree != nil {
		if slices.Contains([]string{"merged", "uptodate", "discarded"}, note.Done) {
			v.Worktree.Done = note.Done
		}
		v.Worktree.Error, v.Worktree.Conflicts = note.Error, note.Files
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if note.Error != "" {
		w.WriteHeader(http.StatusConflict)
	}
	_ = views.SessionPage(v).Render(ctx, w)
}

// worktreeView is the session's worktree panel: nil for a session that
// shares its project's directory.
func (s *Server) worktreeView(ctx context.Context, p store.Project, sess store.Session) *views.WorktreeView {
	wt, err := s.st.SessionWorktree(ctx, sess.ID)
	if err != nil {
		return nil
	}
	repo := launch.WorkspaceDir(s.cfg.DataDir, p)
	if wt.Branch == "" {
		base, ok := s.gitOf(p).BaseBranch(ctx, repo)
		if !ok {
			return nil
		}
		return &views.WorktreeView{SessionID: sess.ID, Branch: launch.BranchFor(sess.ID), Base: base, Pending: true}
	}
	v := &views.WorktreeView{SessionID: sess.ID, Branch: wt.Branch, Base: wt.Base, State: wt.State}
	if wt.State == store.WorktreeDiscarded {
		return v
	}
	d, err := s.gitOf(p).Diff(ctx, launch.WorktreeDir(s.cfg.DataDir, p.ID, sess.ID), wt.Base)
	if err != nil {
		v.DiffError = "The diff could not be read: " + err.Error()
		return v
	}
	v.Added, v.Deleted, v.Truncated = d.Added, d.Deleted, d.Truncated
	for _, f := range d.Files {
		v.Files = append(v.Files, views.WorktreeFile{Path: f.Path, Added: f.Added, Deleted: f.Deleted, Binary: f.Binary})
	}
	for line := range strings.Lines(d.Patch) {
		v.Patch = append(v.Patch, views.PatchLine{Class: patchClass(line), Text: strings.TrimRight(line, "\n")})
	}
	return v
}

// patchClass styles one line of a unified diff.
func patchClass(line string) string {
	switch {
	case strings.HasPrefix(line, "diff --git"), strings.HasPrefix(line, "+++ "), strings.HasPrefix(line, "--- "):
		return "file"
	case strings.HasPrefix(line, "@@"):
		return "hunk"
	case strings.HasPrefix(line, "+"):
		return "add"
	case strings.HasPrefix(line, "-"):
		return "del"
	}
	return "ctx"
}
