package quota

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"golang.org/x/sys/unix"
)

// The file system's reserve. A project's quota is measured once a
// period, so a run may overshoot it by what it writes in one; beside
// PostgreSQL's data (the private database lives under the data dir) the
// rest of that file system is the database's. So the watcher also keeps
// a reserve of it free: below the reserve it stops the live runs of
// every project, those using the most first, and refuses new prompts in
// every project with a sentence until space is freed. Whatever runs
// wrote in one period is the most the reserve may be overshot by.

// maxReserve is the largest default reserve: 2 GiB, or 5% of the file
// system where that is less.
const maxReserve = 2 << 30

// DefaultReserve is the reserve of a file system of size bytes.
func DefaultReserve(size int64) int64 { return min(size/20, maxReserve) }

// Free is what unprivileged users may still write on dir's file system
// (f_bavail: root's reserved blocks are not theirs) and its size.
func Free(dir string) (free, size int64, err error) {
	var s unix.Statfs_t
	if err := unix.Statfs(dir, &s); err != nil {
		return 0, 0, fmt.Errorf("free space of %s: %w", dir, err)
	}
	return int64(s.Bavail) * s.Bsize, int64(s.Blocks) * s.Bsize, nil
}

// low says, for a project whose first directory is dir, whether its file
// system is below the reserve, and what it has free and keeps.
func (w *Watcher) low(dirs []string) (low bool, free, reserve int64) {
	if w.cfg.Reserve < 0 || len(dirs) == 0 {
		return false, 0, 0
	}
	for _, d := range dirs {
		f, size, err := Free(d)
		if err != nil {
			continue // not there (yet): its quota's walk says so
		}
		r := w.cfg.Reserve
		if r == 0 {
			r = DefaultReserve(size)
		}
		if f < r {
			return true, f, r
		}
		if d == dirs[0] {
			free, reserve = f, r
		}
	}
	return false, free, reserve
}

// stopLow stops the live projects on a file system below its reserve,
// those that used the most at their last measurement first, and says
// whether any was.
func (w *Watcher) stopLow(ctx context.Context, live []int64) bool {
	type lowProject struct {
		id int64
		st Status
	}
	var lows []lowProject
	for _, id := range live {
		proj, err := w.cfg.Project(ctx, id)
		if err != nil {
			continue
		}
		if low, free, reserve := w.low(proj.Dirs); low {
			p := w.project(id)
			p.mu.Lock()
			st := p.st
			st.Low, st.Free, st.Reserve = true, free, reserve
			p.mu.Unlock()
			lows = append(lows, lowProject{id, st})
		}
	}
	slices.SortFunc(lows, func(a, b lowProject) int { return cmp.Compare(b.st.Used, a.st.Used) })
	for _, l := range lows {
		w.cfg.Log.Warn("the disk is below its reserve: the project's runs are stopped", "project_id", l.id, "used", l.st.Used,
			"free", l.st.Free, "reserve", l.st.Reserve)
		w.cfg.Over(ctx, l.id, l.st)
	}
	return len(lows) > 0
}
