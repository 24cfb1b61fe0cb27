package server

import (
	"io"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"

	"parley/filetree"
	"parley/views"
)

// handleFileView shows one file: highlighted text up to filetree.MaxView,
// or a sentence for a binary file; a folder asked for here is listed.
func (s *Server) handleFileView() http.Handler {
	return s.withFiles(func(w http.ResponseWriter, r *http.Request, f sessionFiles, p string) {
		if e, err := f.tree.Describe(p); err == nil && e.Kind == filetree.KindDir {
			http.Redirect(w, r, "/sessions/"+f.page.SessionID+"/files?path="+url.QueryEscape(p), http.StatusSeeOther)
			return
		}
		c, err := f.tree.Read(p, filetree.MaxView)
		if err != nil {
			s.fail(w, r, fileError(err, p))
			return
		}
		v := views.FileView{FilesPage: f.page, Size: c.Size, Shown: int64(len(c.Data)), Binary: c.Binary, Truncated: c.Truncated}
		if changed, err := f.changed(r); err == nil {
			_, v.Changed = changed[p]
		}
		if !c.Binary {
			var ok bool
			if v.HTML, ok = views.Highlight(path.Base(p), string(c.Data)); !ok {
				v.Text = string(c.Data)
			}
		}
		render(w, r, views.FilePageView(v))
	})
}

// handleFileDiff shows one file's diff against the session's base. The
// file need not exist any more (a deleted file has a diff too); its path
// is still checked, and git reads it as a literal pathspec.
func (s *Server) handleFileDiff() http.Handler {
	return s.withFiles(func(w http.ResponseWriter, r *http.Request, f sessionFiles, p string) {
		v := views.FileDiffView{FilesPage: f.page}
		switch {
		case p == "":
			s.fail(w, r, badRequest("Name a file to see its diff."))
			return
		case f.git == nil:
			v.Error = "This session shares its project's workspace: there is no branch to compare it with."
		default:
			d, err := f.git.DiffFile(r.Context(), f.dir, f.page.Base, p)
			if err != nil {
				v.Error = "The diff could not be read: " + err.Error()
				break
			}
			v.Binary, v.Truncated = d.Stat.Binary, d.Truncated
			for line := range strings.Lines(d.Patch) {
				v.Patch = append(v.Patch, views.PatchLine{Class: patchClass(line), Text: strings.TrimRight(line, "\n")})
			}
		}
		render(w, r, views.FileDiffPageView(v))
	})
}

// handleFileRaw downloads one file as it is: an attachment of no type the
// browser would render (octet-stream, nosniff), under a sandbox CSP in
// case it is opened anyway.
func (s *Server) handleFileRaw() http.Handler {
	return s.withFiles(func(w http.ResponseWriter, r *http.Request, f sessionFiles, p string) {
		file, size, err := f.tree.OpenFile(p)
		if err != nil {
			s.fail(w, r, fileError(err, p))
			return
		}
		defer file.Close()
		h := w.Header()
		h.Set("Content-Type", "application/octet-stream")
		h.Set("Content-Disposition", fileDisposition(path.Base(p)))
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
		h.Set("Cache-Control", "private, no-store")
		h.Set("Content-Length", strconv.FormatInt(size, 10))
		// The size is the one fstat gave: a file that grows meanwhile is
		// sent as it was, one that shrinks ends the response short.
		_, _ = io.CopyN(w, file, size)
	})
}

// fileDisposition is a Content-Disposition naming the file (RFC 6266; a name
// that is not plain ASCII goes as filename*, RFC 2231).
func fileDisposition(name string) string {
	if d := mime.FormatMediaType("attachment", map[string]string{"filename": name}); d != "" {
		return d
	}
	return "attachment"
}
