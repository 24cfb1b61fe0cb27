package quota

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Status is a project's disk use against its quota, as last measured.
type Status struct {
	Used  int64 // bytes its directories take
	Quota int64 // bytes; 0 = no quota
	At    time.Time
	Took  time.Duration // how long the measuring took
	// Err is why the project could not be measured: ErrTooDeep and
	// ErrUnreadable count as over the quota, any other error as not
	// measured.
	Err error
	// Low: the file system of the project's directories has less than
	// Reserve bytes free (Free), whatever the project holds (free.go).
	Low           bool
	Free, Reserve int64
}

// Over says whether the project is over its quota, or its file system
// below its reserve: either way its runs stop and it takes no prompt.
func (s Status) Over() bool {
	return s.Low || s.Quota > 0 && (s.Used > s.Quota || errors.Is(s.Err, ErrTooDeep) || errors.Is(s.Err, ErrUnreadable))
}

// Sentence says where the project stands and, over the quota, what to
// do; "" without a quota.
func (s Status) Sentence() string {
	switch {
	case s.Low:
		return fmt.Sprintf("The server's disk is nearly full (%s free, less than the %s Parley keeps free for its database): "+
			"Claude takes no new message in any project until an admin frees space on the server.", Bytes(s.Free), Bytes(s.Reserve))
	case s.Quota == 0:
		return ""
	case errors.Is(s.Err, ErrTooDeep):
		return fmt.Sprintf("This project's directories are nested more than %d levels deep, too deep to measure against its disk quota of %s: "+
			"Claude takes no new message in this project until that tree is removed from its workspace on the server.", maxDepth, Bytes(s.Quota))
	case errors.Is(s.Err, ErrUnreadable):
		return fmt.Sprintf("Parley cannot read a directory of this project to measure it against its disk quota of %s: "+
			"Claude takes no new message in this project until that directory is readable again or removed from its workspace on the server.", Bytes(s.Quota))
	case s.Over():
		return fmt.Sprintf("This project's files take %s, more than its disk quota of %s: Claude takes no new message in this project "+
			"until files are removed from its workspace on the server or an admin raises the quota in the project's settings.", Bytes(s.Used), Bytes(s.Quota))
	}
	return fmt.Sprintf("This project's files take %s of its disk quota of %s.", Bytes(s.Used), Bytes(s.Quota))
}

// Bytes says n bytes in binary units: "512 bytes", "61.3 MiB", "10 GiB".
func Bytes(n int64) string {
	units := []string{"KiB", "MiB", "GiB", "TiB"}
	if n < 1024 {
		return fmt.Sprintf("%d bytes", n)
	}
	v, i := float64(n)/1024, 0
	for v >= 1024 && i < len(units)-1 {
		v, i = v/1024, i+1
	}
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d %s", int64(v), units[i])
	}
	return fmt.Sprintf("%.1f %s", v, units[i])
}

// Project is what the watcher measures of a project: its directories
// (workspace, worktrees, home, CLI config) and its quota.
type Project struct {
	Dirs  []string
	Quota int64 // bytes; 0 = none
}

// Config is what a Watcher needs.
type Config struct {
	// Every is how often a project with a live run is measured (0 = a
	// second), less often where measuring every live project would take
	// more than a tenth of a CPU (period). Between two measurements a run
	// writes past the quota what it writes in that time.
	Every time.Duration
	// Project returns a project's directories and quota.
	Project func(ctx context.Context, id int64) (Project, error)
	// Live lists the projects that have a live run here.
	Live func() []int64
	// Over stops a project's runs because of st (st.Sentence says why).
	Over func(ctx context.Context, id int64, st Status)
	// Reserve is what the file system of the projects' directories keeps
	// free (free.go): 0 = DefaultReserve of its size, < 0 = none.
	Reserve int64
	Log     *slog.Logger
}

// Watcher measures projects' disk use: every Config.Every for each
// project with a live run, and on demand (Check) when a run starts or a
// prompt comes.
type Watcher struct {
	cfg  Config
	mu   sync.Mutex
	by   map[int64]*watched
	live atomic.Int64 // projects live at the last tick
}

// watched is one project's last measurement; mu serializes measuring it.
type watched struct {
	mu sync.Mutex
	st Status
}

// New returns a Watcher; call Run to watch the live projects.
func New(c Config) *Watcher {
	if c.Every <= 0 {
		c.Every = time.Second
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	return &Watcher{cfg: c, by: map[int64]*watched{}}
}

// project returns the project's entry, made on first use.
func (w *Watcher) project(id int64) *watched {
	w.mu.Lock()
	defer w.mu.Unlock()
	p := w.by[id]
	if p == nil {
		p = &watched{}
		w.by[id] = p
	}
	return p
}

// Last is the project's last measurement, if it was measured.
func (w *Watcher) Last(id int64) (Status, bool) {
	p := w.project(id)
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.st, !p.st.At.IsZero()
}

// Check returns the project's status, measured now unless the last
// measurement is recent (within its period), under the quota, and made
// against the quota the project has now: a project found over is
// measured again each time, so that it is let go as soon as files are
// removed or the quota raised.
func (w *Watcher) Check(ctx context.Context, id int64) (Status, error) {
	proj, err := w.cfg.Project(ctx, id)
	if err != nil {
		return Status{}, fmt.Errorf("disk quota of project %d: %w", id, err)
	}
	p := w.project(id)
	p.mu.Lock()
	defer p.mu.Unlock()
	if st := p.st; !st.At.IsZero() && st.Quota == proj.Quota && !st.Over() && st.Err == nil && time.Since(st.At) < w.period(p) {
		return st, nil
	}
	return w.measureAs(id, p, proj)
}

// period is how long p's last measurement holds: Config.Every, stretched
// so that measuring every live project takes at most a tenth of one CPU
// (a tree that takes 100 ms to walk, with 5 projects live, every 5 s).
func (w *Watcher) period(p *watched) time.Duration {
	return max(w.cfg.Every, 10*p.st.Took*time.Duration(max(1, w.live.Load())))
}

// measure measures project id now; p.mu is held.
func (w *Watcher) measure(ctx context.Context, id int64, p *watched) (Status, error) {
	proj, err := w.cfg.Project(ctx, id)
	if err != nil {
		return Status{}, fmt.Errorf("disk quota of project %d: %w", id, err)
	}
	return w.measureAs(id, p, proj)
}

// measureAs measures project id, whose directories and quota are proj,
// now; p.mu is held.
func (w *Watcher) measureAs(id int64, p *watched, proj Project) (Status, error) {
	start := time.Now()
	st := Status{Quota: proj.Quota, At: start}
	if proj.Quota > 0 {
		st.Used, st.Err = Usage(proj.Dirs...)
		st.Took = time.Since(start)
	}
	st.Low, st.Free, st.Reserve = w.low(proj.Dirs)
	p.st = st
	if st.Err != nil && !st.Over() {
		return st, fmt.Errorf("disk use of project %d: %w", id, st.Err)
	}
	return st, nil
}

// Run measures each project with a live run once its period is up and
// has Config.Over stop a project over its quota, until ctx ends; every
// tick, below the file system's reserve, it stops them all (free.go).
func (w *Watcher) Run(ctx context.Context) error {
	t := time.NewTicker(w.cfg.Every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			live := w.cfg.Live()
			w.live.Store(int64(len(live)))
			if w.stopLow(ctx, live) {
				continue
			}
			for _, id := range live {
				w.watch(ctx, id)
			}
		}
	}
}

// watch measures a live project whose period is up and stops it if over.
func (w *Watcher) watch(ctx context.Context, id int64) {
	p := w.project(id)
	p.mu.Lock()
	st := p.st
	due := st.At.IsZero() || st.Over() || time.Since(st.At) >= w.period(p)
	var err error
	if due {
		st, err = w.measure(ctx, id, p)
	}
	p.mu.Unlock()
	if err != nil {
		w.cfg.Log.Warn("measure a project's disk use", "project_id", id, "err", err)
		return
	}
	if due && st.Over() {
		w.cfg.Log.Info("a project is over its disk quota: its runs are stopped", "project_id", id, "used", st.Used, "quota", st.Quota)
		w.cfg.Over(ctx, id, st)
	}
}
