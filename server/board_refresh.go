package server

import (
	"context"
	"slices"
	"time"

	"github.com/a-h/templ"

	"parley/board"
	"parley/store"
	"parley/views"
)

// What a sidebar's or board's socket sends (board_ws.go): everything at
// first, then only the sessions that moved and the counts they changed.

// refreshAll reads everything the page shows and replaces it.
func (c *boardConn) refreshAll(ctx context.Context) error {
	c.take() // all is read now
	if c.project.ID == 0 {
		b, err := c.s.board(ctx, c.v, c.projects)
		if err != nil {
			return err
		}
		c.live = board.BoardLive(b, time.Now)
		return c.write(ctx, []templ.Component{views.LiveReplace(views.BoardLists(b))})
	}
	if c.current != "" {
		if err := c.s.st.MarkRead(ctx, c.v.ID, c.current); err != nil {
			return err
		}
	}
	sb, err := c.s.sidebar(ctx, c.project, c.v, c.role, c.current)
	if err != nil {
		return err
	}
	c.live = board.SidebarLive(sb)
	return c.write(ctx, []templ.Component{views.LiveReplace(views.SidebarList(sb), views.SidebarNeeds(sb.NeedsYou))})
}

// refresh reads the sessions poked since the last read and moves each
// where it now goes, with the counts that changed.
func (c *boardConn) refresh(ctx context.Context) error {
	ids, all := c.take()
	if all {
		return c.refreshAll(ctx)
	}
	if len(ids) == 0 {
		return nil
	}
	if c.current != "" && slices.Contains(ids, c.current) {
		// The page shows the session: what changed is seen.
		if err := c.s.st.MarkRead(ctx, c.v.ID, c.current); err != nil {
			return err
		}
	}
	rows, err := c.s.st.BoardSessionsByID(ctx, ids, c.v.ID)
	if err != nil {
		return err
	}
	byID := make(map[string]store.BoardRow, len(rows))
	for _, r := range rows {
		byID[r.ID] = r
	}
	var parts []templ.Component
	recount := false
	for _, id := range ids {
		var it *board.Item
		if r, ok := byID[id]; ok && c.shows(r) {
			x := board.ItemOf(r, personOf(c.v), c.current)
			it = &x
		}
		was := c.live.StatusOf(id)
		recount = recount || was == "" || was == board.NeedsYou || (it != nil && it.Status == board.NeedsYou)
		parts = append(parts, c.change(c.live.Apply(id, it)))
	}
	counts, err := c.counts(ctx, recount)
	if err != nil {
		return err
	}
	return c.write(ctx, append(parts, counts...))
}

// shows says whether the page lists the session.
func (c *boardConn) shows(r store.BoardRow) bool {
	if r.Archived {
		return false
	}
	if c.project.ID != 0 {
		return r.ProjectID == c.project.ID
	}
	return slices.Contains(c.projects, r.ProjectID)
}

// change renders what a change does to the page.
func (c *boardConn) change(ch board.Change) templ.Component {
	prefix, item := "sb-", views.SidebarItem(ch.Item, c.current)
	if c.project.ID == 0 {
		prefix, item = "bd-", views.BoardItem(ch.Item)
	}
	if ch.Remove {
		return views.LiveRemove(prefix + ch.ID)
	}
	before := ""
	if ch.Before != "" {
		before = prefix + ch.Before
	}
	return views.LivePut(ch.Into, before, item)
}

// counts renders the counts a change may have moved: the board's, from
// what it shows; a sidebar's sessions that need the person, read again
// (the sidebar lists only the newest) when recount says it may differ.
func (c *boardConn) counts(ctx context.Context, recount bool) ([]templ.Component, error) {
	if c.project.ID == 0 {
		var parts []templ.Component
		for _, s := range []string{board.SectionNeeds, board.SectionRunning, board.SectionRecent} {
			parts = append(parts, views.BoardCount(s, c.live.Len(s)))
		}
		return []templ.Component{views.LiveReplace(parts...)}, nil
	}
	if !recount || !can(c.role, c.v.Admin, actAnswer) {
		return nil, nil
	}
	n, err := c.s.st.NeedsCount(ctx, c.project.ID)
	if err != nil {
		return nil, err
	}
	return []templ.Component{views.LiveReplace(views.SidebarNeeds(n))}, nil
}
