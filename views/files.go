package views

import (
	"bytes"
	"net/url"
	"strconv"
	"strings"

	"github.com/alecthomas/chroma/v2"
	chromahtml "github.com/alecthomas/chroma/v2/formatters/html"
	"github.com/alecthomas/chroma/v2/lexers"
	"github.com/alecthomas/chroma/v2/styles"
)

// MaxHighlight bounds the text a file view highlights; a larger file is
// shown as plain text. chroma's lexers are the cost: 32 KiB of Go took
// 0.5 s to tokenise, 0.1 s to format and 0.2 s to sanitize on the 2-core
// test machine under a load average of 24, growing linearly
// (BenchmarkHighlight).
const MaxHighlight = 64 << 10

// FilesPage is what every page of a session's files shows: where the
// files are and where in them the page is.
type FilesPage struct {
	SessionID, Title string
	Where            string // "Worktree of branch parley/…" or "Project workspace"
	Base             string // the branch a worktree's diffs compare with; "" for a shared workspace
	Path             string // "" for the top folder
}

// FileEntry is one name of a folder's listing.
type FileEntry struct {
	Name, Path     string
	Kind           string // dir, file, link, other
	Size           int64
	Target         string // a link's text
	Type           string // what an "other" entry is
	Changed        bool   // changed against the base
	Added, Deleted int
}

// FilesView is one folder of a session's files.
type FilesView struct {
	FilesPage
	Entries      []FileEntry
	Truncated    bool           // the folder has more entries than are shown
	Paging       FilesPaging    // where Entries are among the folder's (files_paging.go)
	Changed      []WorktreeFile // on the top folder of a worktree: what changed against the base
	ChangedError string
}

// FileView is one file of a session's files.
type FileView struct {
	FilesPage
	Size      int64
	Shown     int64 // bytes shown: Size, or less when Truncated
	Binary    bool
	Truncated bool   // only the start is shown
	HTML      string // highlighted, sanitized; "" when Text is shown instead
	Text      string
	Changed   bool
}

// FileDiffView is one file's diff against the session's base.
type FileDiffView struct {
	FilesPage
	Patch     []PatchLine
	Truncated bool
	Binary    bool
	Error     string
}

// Crumb is one step of a path, linked to its folder.
type Crumb struct{ Name, Path string }

// crumbs are the folders above p, the top first.
func crumbs(p string) []Crumb {
	if p == "" {
		return nil
	}
	var out []Crumb
	parts := strings.Split(p, "/")
	for i, n := range parts {
		out = append(out, Crumb{Name: n, Path: strings.Join(parts[:i+1], "/")})
	}
	return out
}

// filesURL is the URL of page ("" for a folder, "view", "diff", "raw") of
// path in session id's files.
func filesURL(id, page, path string) string {
	u := "/sessions/" + id + "/files"
	if page != "" {
		u += "/" + page
	}
	if path != "" {
		u += "?path=" + url.QueryEscape(path)
	}
	return u
}

// sizeText is a size for people.
func sizeText(n int64) string {
	switch {
	case n < 1<<10:
		return pluralWord(int(n), "1 byte", strconv.FormatInt(n, 10)+" bytes")
	case n < 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<10), 'f', 1, 64) + " KiB"
	}
	return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
}

// Highlight renders text (the content of the file named name) as
// highlighted, sanitized HTML with line numbers: chroma's classes, styled
// by static/chroma.css. ok is false when text is too large to highlight
// or its kind is unknown; the caller shows it as plain text then.
func Highlight(name, text string) (html string, ok bool) {
	if len(text) > MaxHighlight {
		return "", false
	}
	lexer := lexers.Match(name)
	if lexer == nil {
		return "", false
	}
	it, err := chroma.Coalesce(lexer).Tokenise(nil, text)
	if err != nil {
		return "", false
	}
	var buf bytes.Buffer
	f := chromahtml.New(chromahtml.WithClasses(true), chromahtml.WithLineNumbers(true))
	if err := f.Format(&buf, styles.Fallback, it); err != nil {
		return "", false
	}
	// The file is a run's to write: chroma escapes it, and the sanitizer
	// is the guard in depth, as for model text (markdown.go).
	return sanitizer().SanitizeReader(&buf).String(), true
}
