package board

import (
	"cmp"
	"slices"
	"time"
)

// SidebarList is the id of a sidebar's list of sessions.
const SidebarList = "sb-list"

// Change is what one changed session does to a page: taken off (Remove),
// or put into the list Into before the item Before ("" = at its end).
type Change struct {
	ID     string
	Remove bool
	Item   Item
	Into   string
	Before string
}

// Live is what one page shows, kept to decide where a session that
// changed goes: each list's items in the page's order.
type Live struct {
	lists map[string][]Item
	where map[string]string // item id → list id
	into  func(Item) string
	order map[string]func(x, y Item) int
}

// newest orders items most recently updated first.
func newest(x, y Item) int { return cmp.Or(y.Updated.Compare(x.Updated), cmp.Compare(x.ID, y.ID)) }

// oldestAsk orders items by their oldest open ask, oldest first.
func oldestAsk(x, y Item) int { return cmp.Or(x.AskedAt.Compare(y.AskedAt), cmp.Compare(x.ID, y.ID)) }

// SidebarLive follows a sidebar: one list, newest first.
func SidebarLive(s Sidebar) *Live {
	l := &Live{lists: map[string][]Item{}, where: map[string]string{},
		into:  func(Item) string { return SidebarList },
		order: map[string]func(x, y Item) int{SidebarList: newest}}
	l.fill(SidebarList, s.Items)
	return l
}

// BoardLive follows a board; now tells the time (what finished lately).
func BoardLive(b Board, now func() time.Time) *Live {
	l := &Live{lists: map[string][]Item{}, where: map[string]string{},
		into: func(it Item) string { return Section(it, now()) },
		order: map[string]func(x, y Item) int{SectionNeeds: oldestAsk, SectionRunning: newest,
			SectionRecent: newest}}
	l.fill(SectionNeeds, b.Needs)
	l.fill(SectionRunning, b.Running)
	l.fill(SectionRecent, b.Recent)
	return l
}

func (l *Live) fill(list string, items []Item) {
	l.lists[list] = slices.Clone(items)
	for _, it := range items {
		l.where[it.ID] = list
	}
}

// Apply records that the session id is now it (nil: gone, or no longer
// the person's to see) and says what the page must do.
func (l *Live) Apply(id string, it *Item) Change {
	if old, ok := l.where[id]; ok {
		l.lists[old] = slices.DeleteFunc(l.lists[old], func(x Item) bool { return x.ID == id })
		delete(l.where, id)
	}
	if it == nil {
		return Change{ID: id, Remove: true}
	}
	list := l.into(*it)
	if list == "" {
		return Change{ID: id, Remove: true}
	}
	items := l.lists[list]
	i, _ := slices.BinarySearchFunc(items, *it, l.order[list])
	l.lists[list] = slices.Insert(items, i, *it)
	l.where[id] = list
	c := Change{ID: id, Item: *it, Into: list}
	if i+1 < len(l.lists[list]) {
		c.Before = l.lists[list][i+1].ID
	}
	return c
}

// Len counts the items of a list.
func (l *Live) Len(list string) int { return len(l.lists[list]) }

// Has says whether the page shows the session.
func (l *Live) Has(id string) bool { _, ok := l.where[id]; return ok }

// StatusOf is the status the page shows for the session; "" = not shown.
func (l *Live) StatusOf(id string) string {
	for _, it := range l.lists[l.where[id]] {
		if it.ID == id {
			return it.Status
		}
	}
	return ""
}
