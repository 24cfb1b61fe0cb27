package reach

import (
	"context"
	"slices"
	"strings"
	"time"

	"parley/store"
)

// people are whom an ask reaches: first, and later (escalation).
type people struct {
	first, rest []store.Member
	answer      map[int64]bool // who may answer (owners and members)
}

// answerIDs are the people who may answer.
func (p people) answerIDs() []int64 {
	ids := make([]int64, 0, len(p.answer))
	for id := range p.answer {
		ids = append(ids, id)
	}
	return ids
}

// names names the users ids among p's.
func (p people) names(ids []int64) string {
	var out []string
	for _, m := range slices.Concat(p.first, p.rest) {
		if slices.Contains(ids, m.UserID) {
			out = append(out, displayName(m))
		}
	}
	if len(out) == 0 {
		return "someone"
	}
	return strings.Join(out, ", ")
}

func displayName(m store.Member) string {
	if m.Name != "" {
		return m.Name
	}
	return m.Email
}

// people reads the project's members and splits them by its routing:
// "starter" reaches first the member whose message started the ask's turn,
// "all" every member who may answer, "named" the people named (a viewer
// named is told, with no way to answer). The rest of those who may answer
// are reached at the escalation. A starter who may no longer answer, or
// named people of whom none is left, reach everyone at once.
func (r *Reacher) people(ctx context.Context, a store.ReachAsk, pr store.ProjectReach) (people, error) {
	ms, err := r.st.Members(ctx, a.ProjectID)
	if err != nil {
		return people{}, err
	}
	// A deactivated account is reached by nothing: an ask's text is the
	// project's, and its answers would be refused anyway.
	ids := make([]int64, len(ms))
	for i, m := range ms {
		ids[i] = m.UserID
	}
	off, err := r.st.Deactivated(ctx, ids)
	if err != nil {
		return people{}, err
	}
	ms = slices.DeleteFunc(ms, func(m store.Member) bool { return off[m.UserID] })
	p := people{answer: map[int64]bool{}}
	for _, m := range ms {
		if m.Role != "viewer" {
			p.answer[m.UserID] = true
		}
	}
	var pick func(store.Member) bool
	switch pr.FirstReach {
	case "named":
		pick = func(m store.Member) bool { return slices.Contains(pr.Named, m.UserID) }
	case "starter":
		starter, err := r.st.AskStarter(ctx, a.SessionID, a.ID)
		if err != nil {
			return people{}, err
		}
		pick = func(m store.Member) bool { return m.UserID == starter && p.answer[m.UserID] }
	default:
		pick = func(m store.Member) bool { return p.answer[m.UserID] }
	}
	for _, m := range ms {
		switch {
		case pick(m):
			p.first = append(p.first, m)
		case p.answer[m.UserID]:
			p.rest = append(p.rest, m)
		}
	}
	if !slices.ContainsFunc(p.first, func(m store.Member) bool { return p.answer[m.UserID] }) {
		p.first, p.rest = append(p.first, p.rest...), nil
	}
	return p, nil
}

// quiet says whether t falls in u's quiet hours.
func quiet(u store.UserReach, t time.Time) bool {
	if u.QuietFrom == "" || u.QuietTo == "" || u.QuietFrom == u.QuietTo {
		return false
	}
	loc, err := time.LoadLocation(u.TZ)
	if err != nil {
		loc = time.UTC
	}
	now := t.In(loc).Format("15:04")
	if u.QuietFrom < u.QuietTo {
		return now >= u.QuietFrom && now < u.QuietTo
	}
	return now >= u.QuietFrom || now < u.QuietTo // across midnight
}
