package filetree

import (
	"cmp"
	"container/heap"
	"errors"
	"fmt"
	"io"
	"slices"
)

// Paging a folder: its entries in the listing's order (folders first,
// then by name) a page at a time, each page after the last entry of the
// one before. A folder's order on disk is not that order, so every page
// reads all the folder's names, in batches, and keeps only the page's
// entries (a bounded heap): memory is a page and a batch, whatever the
// folder's size; time grows with the folder, up to MaxScan names.
const (
	PageSize  = 200     // entries of a page
	MaxScan   = 100_000 // names of one folder read for a page; more are not listed
	readBatch = 1024    // names read from the directory at a time
)

// Cursor is where a page starts: after the entry named Name, a folder
// when Dir. The zero Cursor is the folder's start.
type Cursor struct {
	Dir  bool
	Name string
}

// IsStart reports whether c is the folder's start.
func (c Cursor) IsStart() bool { return c == Cursor{} }

// CursorOf is the cursor after e.
func CursorOf(e Entry) Cursor { return Cursor{Dir: e.Kind == KindDir, Name: e.Name} }

// Page is one page of a folder.
type Page struct {
	Entries   []Entry
	Before    int  // entries before the page (up to its cursor)
	Total     int  // entries in the folder (git's internals left out)
	Truncated bool // the folder holds more than MaxScan names; the rest are not listed
}

// More reports whether entries follow the page.
func (p Page) More() bool { return p.Before+len(p.Entries) < p.Total }

// ListPage lists up to n entries of the directory p (a path Clean
// accepted) that come after the cursor, as List describes them; n < 1
// is PageSize.
func (t *Tree) ListPage(p string, after Cursor, n int) (Page, error) {
	if n < 1 {
		n = PageSize
	}
	d, err := t.dir.Sub(p)
	if err != nil {
		return Page{}, err
	}
	defer d.Close()
	fd := int(d.File().Fd())
	var pg Page
	h := &pageHeap{}
	for pg.Total < MaxScan {
		names, err := d.File().Readdirnames(min(readBatch, MaxScan-pg.Total))
		for _, name := range names {
			if hidden(name) {
				continue
			}
			pg.Total++
			if !after.IsStart() && !after.Dir && name <= after.Name {
				pg.Before++ // before a file: every folder, and files up to its name
				continue
			}
			if h.Len() == n && (*h)[0].Kind == KindDir && name > (*h)[0].Name {
				continue // after the page whatever it is: no need to describe it
			}
			e, ok := describe(fd, name)
			switch {
			case !ok:
				pg.Total-- // gone meanwhile
			case !after.IsStart() && !entryAfter(e, after):
				pg.Before++
			case h.Len() < n:
				heap.Push(h, e)
			case entryLess(e, (*h)[0]):
				(*h)[0] = e
				heap.Fix(h, 0)
			}
		}
		if errors.Is(err, io.EOF) || (err == nil && len(names) == 0) {
			pg.Entries = sortedEntries(*h)
			return pg, nil
		}
		if err != nil {
			return Page{}, fmt.Errorf("list %s: %w", p, err)
		}
	}
	// MaxScan names read: one more tells a larger folder.
	if extra, _ := d.File().Readdirnames(1); len(extra) > 0 {
		pg.Truncated = true
	}
	pg.Entries = sortedEntries(*h)
	return pg, nil
}

// entryLess is the listing's order: folders first, then by name.
func entryLess(a, b Entry) bool { return compareEntries(a, b) < 0 }

func compareEntries(a, b Entry) int {
	return cmp.Or(cmp.Compare(rank(a.Kind), rank(b.Kind)), cmp.Compare(a.Name, b.Name))
}

// entryAfter reports whether e comes after the cursor c.
func entryAfter(e Entry, c Cursor) bool {
	rc := 1
	if c.Dir {
		rc = 0
	}
	return cmp.Or(cmp.Compare(rank(e.Kind), rc), cmp.Compare(e.Name, c.Name)) > 0
}

func sortedEntries(es []Entry) []Entry {
	out := slices.Clone(es)
	slices.SortFunc(out, compareEntries)
	return out
}

// pageHeap is a max-heap of entries in the listing's order: its top is
// the last entry of the page so far, the one a better entry replaces.
type pageHeap []Entry

func (h pageHeap) Len() int           { return len(h) }
func (h pageHeap) Less(i, j int) bool { return entryLess(h[j], h[i]) }
func (h pageHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *pageHeap) Push(x any)        { *h = append(*h, x.(Entry)) }
func (h *pageHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
