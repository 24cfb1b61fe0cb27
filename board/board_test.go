package board

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestStatusFromTheStore(t *testing.T) {
	tests := []struct {
		status  string
		pending int
		role    string
		admin   bool
		want    string
	}{
		{"running", 0, "member", false, Running},
		{"waiting", 1, "member", false, NeedsYou},
		{"waiting", 1, "owner", false, NeedsYou},
		{"waiting", 1, "", true, NeedsYou},
		{"waiting", 1, "viewer", false, Waiting}, // a viewer cannot answer
		{"completed", 0, "member", false, Completed},
		{"ended", 0, "member", false, Completed},
		{"error", 0, "member", false, Errored},
		{"interrupted", 0, "member", false, Interrupted},
		{"idle", 0, "member", false, Idle},
	}
	for _, tt := range tests {
		if got := Status(tt.status, tt.pending, tt.role, tt.admin); got != tt.want {
			t.Errorf("Status(%q, %d, %q, %v) = %q, want %q", tt.status, tt.pending, tt.role, tt.admin, got, tt.want)
		}
	}
}

func TestBoardSectionsAndLiveMoves(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	at := func(min int) time.Time { return now.Add(time.Duration(-min) * time.Minute) }
	items := []Item{
		{ID: "a", Status: NeedsYou, AskedAt: at(10), Updated: at(10)},
		{ID: "b", Status: NeedsYou, AskedAt: at(30), Updated: at(1)},
		{ID: "c", Status: Running, Updated: at(2)},
		{ID: "d", Status: Completed, Updated: at(5)},
		{ID: "e", Status: Completed, Updated: now.Add(-25 * time.Hour)}, // too old
		{ID: "f", Status: Idle, Updated: at(1)},
	}
	b := NewBoard(items, now)
	ids := func(list []Item) (out []string) {
		for _, it := range list {
			out = append(out, it.ID)
		}
		return out
	}
	if diff := cmp.Diff([][]string{{"b", "a"}, {"c"}, {"d"}}, [][]string{ids(b.Needs), ids(b.Running), ids(b.Recent)}); diff != "" {
		t.Errorf("sections (-want +got):\n%s", diff)
	}
	l := BoardLive(b, func() time.Time { return now })
	// c finishes: it leaves "running" for the top of "recent", before d.
	c := Item{ID: "c", Status: Completed, Updated: now}
	if got, want := l.Apply("c", &c), (Change{ID: "c", Item: c, Into: SectionRecent, Before: "d"}); got != want {
		t.Errorf("c finished: %+v, want %+v", got, want)
	}
	// a new ask in c goes to the end of "needs": its ask is the newest.
	c2 := Item{ID: "c", Status: NeedsYou, AskedAt: now, Updated: now}
	if got := l.Apply("c", &c2); got.Into != SectionNeeds || got.Before != "" {
		t.Errorf("c asked: %+v, want the end of %s", got, SectionNeeds)
	}
	if got := l.Apply("a", nil); !got.Remove {
		t.Errorf("a gone: %+v, want a removal", got)
	}
	if l.Len(SectionNeeds) != 2 || l.Len(SectionRecent) != 1 || l.Len(SectionRunning) != 0 {
		t.Errorf("lengths needs %d running %d recent %d, want 2 0 1", l.Len(SectionNeeds), l.Len(SectionRunning), l.Len(SectionRecent))
	}
	if got := l.StatusOf("c"); got != NeedsYou {
		t.Errorf("StatusOf(c) = %q, want %q", got, NeedsYou)
	}
}

func TestSidebarLiveMovesTheChangedToTheTop(t *testing.T) {
	now := time.Now()
	s := Sidebar{Items: []Item{{ID: "x", Updated: now.Add(-time.Minute)}, {ID: "y", Updated: now.Add(-2 * time.Minute)}}}
	l := SidebarLive(s)
	y := Item{ID: "y", Status: Running, Updated: now}
	if got, want := l.Apply("y", &y), (Change{ID: "y", Item: y, Into: SidebarList, Before: "x"}); got != want {
		t.Errorf("y changed: %+v, want %+v", got, want)
	}
	if got := l.StatusOf("nobody"); got != "" {
		t.Errorf("StatusOf(unknown) = %q, want empty", got)
	}
}
