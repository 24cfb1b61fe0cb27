package server

import (
	"errors"
	"net/http"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"parley/filetree"
	"parley/launch"
	"parley/safefile"
	"parley/store"
	"parley/views"
	"parley/worktree"
)

// A session's files, read-only: its worktree, or its project's workspace
// when it has none. The directory is the project's runs' to write, so
// every name is resolved by package filetree without following a link
// (openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS, else an O_NOFOLLOW walk):
// a link is listed with its text and never opened, a FIFO or device is
// named and never opened. Viewers may browse; outsiders get the session
// page's refusal.

// sessionFiles is the open tree of a session's files.
type sessionFiles struct {
	tree *filetree.Tree
	page views.FilesPage
	git  *worktree.Git // nil for a shared workspace: nothing to diff against
	dir  string        // the worktree, for git
}

// withFiles is a handler of the session's files: h gets them opened for
// r (openFiles) and they are closed after it; a refusal is the page's.
func (s *Server) withFiles(h func(w http.ResponseWriter, r *http.Request, f sessionFiles, p string)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, p, err := s.openFiles(r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		defer f.tree.Close()
		h(w, r, f, p)
	})
}

// openFiles authorizes the request's viewer for the session, checks the
// path asked for, and opens the session's tree. The caller closes it.
func (s *Server) openFiles(r *http.Request) (sessionFiles, string, error) {
	ctx := r.Context()
	sess, _, err := s.authorizeSession(ctx, r, r.PathValue("id"), actView)
	if err != nil {
		return sessionFiles{}, "", err
	}
	p, err := filetree.Clean(r.URL.Query().Get("path"))
	if err != nil {
		return sessionFiles{}, "", fileError(err, r.URL.Query().Get("path"))
	}
	proj, err := s.st.GetProject(ctx, sess.ProjectID)
	if err != nil {
		return sessionFiles{}, "", err
	}
	wt, err := s.st.SessionWorktree(ctx, sess.ID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return sessionFiles{}, "", err
	}
	f := sessionFiles{page: views.FilesPage{SessionID: sess.ID, Title: sess.Title, Path: p}}
	var base, rel string
	switch {
	case wt.Branch != "" && wt.State == store.WorktreeDiscarded:
		return sessionFiles{}, "", &httpError{http.StatusNotFound, "This session's worktree was discarded; its work is kept on branch " + wt.Branch + ", and the next message checks it out again."}
	case wt.Branch != "":
		base, f.dir = launch.ProjectDir(s.cfg.DataDir, proj.ID), launch.WorktreeDir(s.cfg.DataDir, proj.ID, sess.ID)
		rel, _ = filepath.Rel(base, f.dir)
		f.git, f.page.Base, f.page.Where = s.gitOf(proj), wt.Base, "worktree of branch "+wt.Branch
	default:
		dir := launch.WorkspaceDir(s.cfg.DataDir, proj)
		base, rel, f.page.Where = filepath.Dir(dir), filepath.Base(dir), "the project's workspace"
	}
	// base is Parley's (the data directory, or the folder an admin chose);
	// rel and everything below it are the runs'.
	if f.tree, err = filetree.Open(base, rel); err != nil {
		if filetree.Missing(err) {
			return sessionFiles{}, "", &httpError{http.StatusNotFound, "This session has no files yet: they appear once Claude has worked in it."}
		}
		return sessionFiles{}, "", fileError(err, "")
	}
	return f, p, nil
}

// fileError is what a person is told about a path that was refused or
// not found; other errors pass through.
func fileError(err error, p string) error {
	q := strconv.Quote(p)
	switch {
	case errors.Is(err, filetree.ErrBadPath), errors.Is(err, safefile.ErrBadName):
		return &httpError{http.StatusBadRequest, "That is not a path inside this session's files: a path starts at the top folder, without “..”, a leading “/” or a NUL byte."}
	case errors.Is(err, filetree.ErrHidden):
		return &httpError{http.StatusNotFound, "Git's own files are not shown here."}
	case errors.Is(err, safefile.ErrSymlink):
		return &httpError{http.StatusNotFound, q + " is a symbolic link, or a path through one. Parley lists links but never follows them: there is nothing to show."}
	case errors.Is(err, safefile.ErrNotRegular):
		return &httpError{http.StatusBadRequest, q + " is not a regular file (a FIFO, a device or a socket): Parley never opens those."}
	case errors.Is(err, filetree.ErrLinkedIn):
		return &httpError{http.StatusNotFound, q + " is a hard link to a file the session's runs do not own (it may be outside the session's files): Parley does not show it."}
	case errors.Is(err, safefile.ErrChanged):
		return &httpError{http.StatusConflict, q + " changed while it was being opened; reload the page."}
	case filetree.Missing(err):
		return &httpError{http.StatusNotFound, "There is no " + q + " in this session's files; it may have been removed."}
	}
	return err
}

// changed is the files changed against the base, by path; nil for a
// shared workspace.
func (f sessionFiles) changed(r *http.Request) (map[string]worktree.FileStat, error) {
	if f.git == nil {
		return nil, nil
	}
	list, err := f.git.Changed(r.Context(), f.dir, f.page.Base)
	if err != nil {
		return nil, err
	}
	m := make(map[string]worktree.FileStat, len(list))
	for _, c := range list {
		m[c.Path] = c
	}
	return m, nil
}

// handleFiles lists one folder of the session's files.
func (s *Server) handleFiles() http.Handler {
	return s.withFiles(func(w http.ResponseWriter, r *http.Request, f sessionFiles, p string) {
		after := parseAfter(r.URL.Query().Get("after"))
		l, err := f.tree.ListPage(p, after, filetree.PageSize)
		if err != nil {
			s.fail(w, r, fileError(err, p))
			return
		}
		v := views.FilesView{FilesPage: f.page, Paging: filesPaging(r, f.page.SessionID, p, l)}
		changed, err := f.changed(r)
		if err != nil {
			v.ChangedError = "What changed against " + f.page.Base + " could not be read: " + err.Error()
		}
		for _, e := range l.Entries {
			full := path.Join(p, e.Name)
			c, ok := changed[full]
			v.Entries = append(v.Entries, views.FileEntry{Name: e.Name, Path: full, Kind: string(e.Kind), Size: e.Size,
				Target: e.Target, Type: e.Type, Changed: ok, Added: c.Added, Deleted: c.Deleted})
		}
		if p == "" && after.IsStart() {
			v.Changed = changedList(changed)
		}
		render(w, r, views.FilesPageView(v))
	})
}

// changedList is the changed files in git's order (by path).
func changedList(m map[string]worktree.FileStat) []views.WorktreeFile {
	var out []views.WorktreeFile
	for _, c := range m {
		out = append(out, views.WorktreeFile{Path: c.Path, Added: c.Added, Deleted: c.Deleted, Binary: c.Binary})
	}
	slices.SortFunc(out, func(a, b views.WorktreeFile) int { return strings.Compare(a.Path, b.Path) })
	return out
}
