// Package warm keeps claude processes started ahead, a few per project in
// use, so that a new session's first message is written to a process that
// is already up instead of waiting for the CLI to start (about a second of
// CPU). Each is started by the runner exactly as a run is (runner.Warm),
// with the session id, working directory (a worktree made ahead in a git
// project), settings, instructions and ask server the project's next new
// session would get. A new session takes one (Take), is created with its
// ids, and its run adopts the process (Starter) when it is still what a
// start would get now; else it is killed and the start is cold.
package warm

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"parley/launch"
	"parley/runner"
)

// Config bounds the pool.
type Config struct {
	// PerProject is how many processes are kept ahead for each project in
	// use; 0 = none (no pool).
	PerProject int
	// Max bounds the processes kept ahead in all; 0 = PerProject. They
	// hold slots of the run cap too, and give them up to any run.
	Max int
	// IdleAfter empties a project's pool when nobody opened the project
	// or one of its sessions for this long; 0 = 5 minutes.
	IdleAfter time.Duration
	// Tick is how often the pool is looked after (refilled, shrunk, its
	// lease checked); Recheck how often each project's processes are
	// compared with what a start would get now; TakenWait how long a
	// process taken for a session may wait for its run. 0 = 1 s, 3 s, 1 min.
	Tick, Recheck, TakenWait time.Duration
	// RefillDelay is how long after a take the project's next process
	// waits to start; 0 = 2 s.
	RefillDelay time.Duration
	// SpendRefill is how long the project's next process waits after one
	// was ended because the project spent since it started (under a daily
	// spending limit its --max-budget-usd moved); 0 = 15 s. While the
	// project's sessions work, what it spent moves with each model
	// request: without the wait it would start a process (about a second
	// of CPU) at every Recheck, each stale within seconds.
	SpendRefill time.Duration
}

// Pool is the processes started ahead, by project.
type Pool struct {
	cfg Config
	sup *runner.Supervisor
	l   *launch.Launcher
	log *slog.Logger

	mu       sync.Mutex
	projects map[int64]*project
	taken    map[string]*entry // by session id: taken, not yet adopted
	stopped  bool
	recheck  bool // a settings change was announced (Recheck)
	kick     chan struct{}
	wg       sync.WaitGroup // kills and worktree removals off a caller's path
}

// project is a project in use and its processes ready to be taken.
type project struct {
	used      time.Time
	ready     []*entry
	skipUntil time.Time // its options could not be made, or a process died: tried again then
	deaths    int       // processes that died before use since one was taken (deathWait)
}

// deathWait is how long a project's next process waits after n processes
// in a row died before any session took one: 1 s, doubling, at most
// 5 minutes. A process that crashes at start, is killed by the OOM
// killer or fails its prime would else be started again at every tick,
// a second of CPU each.
func deathWait(n int) time.Duration {
	if n > 9 {
		return 5 * time.Minute
	}
	return min(time.Second<<max(n-1, 0), 5*time.Minute)
}

// entry is one process started ahead and what it was started with.
type entry struct {
	w         *runner.Warm
	projectID int64
	claudeID  string
	fp        string // fingerprint of its options
	rest      string // fingerprint of its options but the value of its spending limit
	base      string // "branch commit" of the base its worktree was made from; "" = no git
	takenAt   time.Time
}

// New returns a pool of processes the supervisor starts with the
// launcher's options; it starts none before Run.
func New(cfg Config, sup *runner.Supervisor, l *launch.Launcher, log *slog.Logger) *Pool {
	if cfg.Max <= 0 {
		cfg.Max = cfg.PerProject
	}
	if cfg.IdleAfter <= 0 {
		cfg.IdleAfter = 5 * time.Minute
	}
	if cfg.Tick <= 0 {
		cfg.Tick = time.Second
	}
	if cfg.Recheck <= 0 {
		cfg.Recheck = 3 * time.Second
	}
	if cfg.TakenWait <= 0 {
		cfg.TakenWait = time.Minute
	}
	if cfg.RefillDelay <= 0 {
		cfg.RefillDelay = 2 * time.Second
	}
	if cfg.SpendRefill <= 0 {
		cfg.SpendRefill = 15 * time.Second
	}
	return &Pool{cfg: cfg, sup: sup, l: l, log: log.With("part", "warm"), projects: map[int64]*project{},
		taken: map[string]*entry{}, kick: make(chan struct{}, 1)}
}

// Touch says the project is in use: someone opened it or one of its
// sessions. Its pool fills (up to the bounds) and stays while it is used.
func (p *Pool) Touch(projectID int64) {
	if p == nil || p.cfg.PerProject <= 0 {
		return
	}
	p.mu.Lock()
	pr := p.projects[projectID]
	if pr == nil {
		pr = &project{}
		p.projects[projectID] = pr
	}
	fresh := len(pr.ready) < p.cfg.PerProject
	pr.used = time.Now()
	p.mu.Unlock()
	if fresh {
		p.poke()
	}
}

// Recheck has every process ahead compared with what a start would get
// now at once (a project's settings, asks, members or limits changed),
// rather than at the next Config.Recheck.
func (p *Pool) Recheck() {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.recheck = true
	p.mu.Unlock()
	p.poke()
}

func (p *Pool) poke() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// Pids are the process ids of the project's processes ahead, ready to be
// taken (for tests and the operator's eye).
func (p *Pool) Pids(projectID int64) []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	var pids []int
	if pr := p.projects[projectID]; pr != nil {
		for _, e := range pr.ready {
			pids = append(pids, e.w.Pid())
		}
	}
	return pids
}

// ReadyPids are those of Pids whose process has finished its prime
// (runner.Warm.Ready): a message taken now goes to the CLI at once.
func (p *Pool) ReadyPids(projectID int64) []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	var pids []int
	if pr := p.projects[projectID]; pr != nil {
		for _, e := range pr.ready {
			if e.w.Ready() {
				pids = append(pids, e.w.Pid())
			}
		}
	}
	return pids
}

// Run looks after the pool until ctx ends, then kills every process in it.
func (p *Pool) Run(ctx context.Context) error {
	if p.cfg.PerProject <= 0 {
		<-ctx.Done()
		return nil
	}
	defer p.stop()
	tick := time.NewTicker(p.cfg.Tick)
	defer tick.Stop()
	checked := time.Now()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-p.kick:
		}
		if !p.sup.MayWarm() {
			// Draining, stopping, or this replica's lease is in doubt: no
			// process starts here, and none waits.
			p.empty(ctx, "the replica may not start runs now")
			continue
		}
		p.reap(ctx)
		p.mu.Lock()
		due := p.recheck || time.Since(checked) >= p.cfg.Recheck
		p.recheck = false
		p.mu.Unlock()
		if due {
			p.recheckAll(ctx)
			checked = time.Now()
		}
		p.fill(ctx)
	}
}

// stop kills every process of the pool and waits for what it started.
func (p *Pool) stop() {
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
	p.empty(context.Background(), "Parley is stopping")
	p.wg.Wait()
}
