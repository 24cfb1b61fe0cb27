package views

import (
	"strconv"
	"strings"

	"github.com/a-h/templ"
)

// FilesPaging is where a folder's listing is among its entries: a folder
// is listed a page at a time (package filetree's ListPage).
type FilesPaging struct {
	Before     int    // entries before this page
	Total      int    // entries in the folder
	MoreURL    string // the next page; "" when this is the last
	Cumulative bool   // the page is appended to the ones before (htmx): count them all
	Truncated  bool   // the folder holds more than Scan names
	Scan       int    // the names of a folder read for a page (filetree.MaxScan)
}

// paged reports whether the folder has more entries than one page.
func (p FilesPaging) paged(shown int) bool { return p.Before > 0 || p.Total > shown }

// filesCount says which of the folder's entries are shown.
func filesCount(v FilesView) string {
	p, n := v.Paging, len(v.Entries)
	switch {
	case p.Before == 0 || p.Cumulative:
		return "Showing " + Count(p.Before+n) + " of " + Count(p.Total) + " entries."
	case n == 0:
		return "No more entries (of " + Count(p.Total) + ")."
	}
	return "Showing entries " + Count(p.Before+1) + "–" + Count(p.Before+n) + " of " + Count(p.Total) + "."
}

// focusRow makes the first row of a later page take the focus when it has
// no link to take it (focusLink): htmx focuses an appended [autofocus].
func focusRow(v FilesView, i int, e FileEntry) templ.Attributes {
	if i != 0 || v.Paging.Before == 0 || e.Kind == "dir" || e.Kind == "file" {
		return nil
	}
	return templ.Attributes{"tabindex": "-1", "autofocus": true}
}

// focusLink reports whether the i-th row's link takes the focus: the
// first of a later page, so that "Show more" from the keyboard lands on
// what it showed.
func focusLink(v FilesView, i int) bool { return i == 0 && v.Paging.Before > 0 }

// Count is n for people, its thousands apart: 1,234.
func Count(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
