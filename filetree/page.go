package filetree

import (
	"cmp"
	"container/heap"
	"fmt"
	"slices"

	"golang.org/x/sys/unix"
)

// Paging a folder: its entries in the listing's order (folders first,
// then by name) a page at a time, each page after the last entry of the
// one before. A folder's order on disk is not that order, so every page
// reads all the folder's names (getdents, 32 KiB at a time, each with its
// kind) and describes and keeps only the page's entries (a bounded heap):
// memory is a page and a buffer, whatever the folder's size; time grows
// with the folder, up to MaxScan names.
const (
	PageSize = 200     // entries of a page
	MaxScan  = 100_000 // names of one folder read for a page; more are not listed
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
	names := newDirents(fd)
	for {
		name, typ, ok, err := names.next()
		if err != nil {
			return Page{}, fmt.Errorf("list %s: %w", p, err)
		}
		if !ok {
			break
		}
		if hidden(name) {
			continue
		}
		if pg.Total == MaxScan {
			pg.Truncated = true
			break
		}
		pg.Total++
		e, described := Entry{Name: name, Kind: KindFile}, false
		switch typ {
		case unix.DT_DIR:
			e.Kind = KindDir
		case unix.DT_UNKNOWN:
			if e, described = describe(fd, name); !described {
				pg.Total-- // gone meanwhile
				continue
			}
		}
		// Where it falls by its kind and name; only an entry of the page
		// is described (a folder's order on disk is not the listing's, so
		// the page is a bounded heap of the best so far).
		if !after.IsStart() && !entryAfter(e, after) {
			pg.Before++
			continue
		}
		if h.Len() == n && !entryLess(e, (*h)[0]) {
			continue
		}
		if !described {
			var ok bool
			if e, ok = describe(fd, name); !ok {
				pg.Total--
				continue
			}
		}
		if h.Len() < n {
			heap.Push(h, e)
		} else {
			(*h)[0] = e
			heap.Fix(h, 0)
		}
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
