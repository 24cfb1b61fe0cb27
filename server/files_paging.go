package server

import (
	"net/http"
	"net/url"
	"strings"

	"parley/filetree"
	"parley/views"
)

// A folder of the session's files is listed a page at a time
// (filetree.ListPage): ?after=d:NAME or ?after=f:NAME names the last entry
// of the page before, a folder or anything else.

// parseAfter is the cursor of the query's after; anything unreadable is
// the folder's start.
func parseAfter(s string) filetree.Cursor {
	kind, name, ok := strings.Cut(s, ":")
	if !ok || name == "" || (kind != "d" && kind != "f") {
		return filetree.Cursor{}
	}
	return filetree.Cursor{Dir: kind == "d", Name: name}
}

// afterParam is the after of the page that follows c.
func afterParam(c filetree.Cursor) string {
	if c.Dir {
		return "d:" + c.Name
	}
	return "f:" + c.Name
}

// filesPaging is where pg is among the folder p's entries, and the link
// to the next page. A page htmx appends (HX-Request) counts the ones
// before it as shown.
func filesPaging(r *http.Request, sessionID, p string, pg filetree.Page) views.FilesPaging {
	v := views.FilesPaging{Before: pg.Before, Total: pg.Total, Truncated: pg.Truncated, Scan: filetree.MaxScan,
		Cumulative: r.Header.Get("HX-Request") == "true"}
	if pg.More() && len(pg.Entries) > 0 {
		q := url.Values{"after": {afterParam(filetree.CursorOf(pg.Entries[len(pg.Entries)-1]))}}
		if p != "" {
			q.Set("path", p)
		}
		v.MoreURL = "/sessions/" + sessionID + "/files?" + q.Encode()
	}
	return v
}
