// Package board is "sessions at a glance": what a project's sidebar and a
// person's home board hold, made from the store's rows, and where a
// session that changed goes on each (the live-update decisions). Its Feed
// turns the database's notices of changed sessions into hub pokes.
package board

import (
	"cmp"
	"slices"
	"time"

	"parley/store"
)

// Live statuses of a session as a person sees it.
const (
	NeedsYou    = "needs-you"   // an ask is open and the person may answer it
	Waiting     = "waiting"     // an ask is open; the person may only watch
	Running     = "running"     // Claude is working
	Completed   = "completed"   // the last turn ended well
	Errored     = "error"       // the last turn or the process failed
	Interrupted = "interrupted" // a member stopped the turn
	Idle        = "idle"        // nothing has run yet
)

// Board sections, by id of the list that holds them.
const (
	SectionNeeds   = "board-needs"
	SectionRunning = "board-running"
	SectionRecent  = "board-recent"
)

// SidebarLimit is how many sessions a sidebar lists; the rest are on the
// project's history page.
const SidebarLimit = 50

// BoardLimit bounds each section of a board.
const BoardLimit = 50

// RecentFor is how long a finished session stays on the board.
const RecentFor = 24 * time.Hour

// Person is who looks at a sidebar or board.
type Person struct {
	ID    int64
	Admin bool
}

// Item is one session on a sidebar or a board.
type Item struct {
	ID, Title, StartedBy string
	ProjectID            int64
	Project              string
	Status               string // a live status (NeedsYou…)
	Updated, AskedAt     time.Time
	// Unread: the session has events the person has not seen.
	Unread bool
}

// mayAnswer says whether the role (or an admin) may answer asks.
func mayAnswer(role string, admin bool) bool {
	return admin || role == "owner" || role == "member"
}

// Status is the live status of a session with the store's status and its
// open asks, as a person with role sees it.
func Status(status string, pending int, role string, admin bool) string {
	switch {
	case pending > 0 && mayAnswer(role, admin):
		return NeedsYou
	case pending > 0 || status == "waiting":
		return Waiting
	}
	switch status {
	case "running":
		return Running
	case "completed", "ended":
		return Completed
	case "error", "failed":
		return Errored
	case "interrupted":
		return Interrupted
	}
	return Idle
}

// ItemOf is the row as p sees it; current is the session p has open,
// which is never unread.
func ItemOf(r store.BoardRow, p Person, current string) Item {
	return Item{ID: r.ID, Title: r.Title, StartedBy: r.CreatedBy, ProjectID: r.ProjectID, Project: r.ProjectName,
		Status: Status(r.Status, r.Pending, r.Role, p.Admin), Updated: r.UpdatedAt, AskedAt: r.AskedAt,
		Unread: r.LastSeq > r.ReadSeq && r.ID != current}
}

// Sidebar is a project's sessions, newest first, as one person sees them.
type Sidebar struct {
	ProjectID int64
	Project   string
	Current   string // the session open in the page; "" = none
	Items     []Item
	Total     int // sessions in the project (not archived)
	NeedsYou  int // sessions with an ask the person may answer
	CanStart  bool
}

// More says the project has sessions the sidebar does not list.
func (s Sidebar) More() bool { return s.Total > len(s.Items) }

// Board is what needs a person across their projects (oldest ask first),
// what runs now and what finished lately (newest first).
type Board struct {
	Needs, Running, Recent []Item
}

// NewBoard sorts the items into their sections as of now.
func NewBoard(items []Item, now time.Time) Board {
	var b Board
	for _, it := range items {
		switch Section(it, now) {
		case SectionNeeds:
			b.Needs = append(b.Needs, it)
		case SectionRunning:
			b.Running = append(b.Running, it)
		case SectionRecent:
			b.Recent = append(b.Recent, it)
		}
	}
	slices.SortStableFunc(b.Needs, func(x, y Item) int { return x.AskedAt.Compare(y.AskedAt) })
	newest := func(x, y Item) int { return cmp.Or(y.Updated.Compare(x.Updated), cmp.Compare(x.ID, y.ID)) }
	slices.SortStableFunc(b.Running, newest)
	slices.SortStableFunc(b.Recent, newest)
	return b
}

// Section is the board list a session belongs in now; "" = none (idle, or
// finished longer than RecentFor ago).
func Section(it Item, now time.Time) string {
	switch it.Status {
	case NeedsYou:
		return SectionNeeds
	case Running, Waiting:
		return SectionRunning
	case Completed, Errored, Interrupted:
		if now.Sub(it.Updated) <= RecentFor {
			return SectionRecent
		}
	}
	return ""
}
