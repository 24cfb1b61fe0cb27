package warm

import (
	"context"
	"errors"
	"time"

	"parley/launch"

	"github.com/google/uuid"
)

// fill starts a process for each project in use short of its share,
// while the pool is under its bound and a slot is free.
func (p *Pool) fill(ctx context.Context) {
	for _, id := range p.short() {
		if !p.sup.SlotFree() {
			return
		}
		p.startOne(ctx, id)
	}
}

// short lists the projects in use with fewer processes (ready or taken,
// not yet adopted) than their share, as far as the bound in all allows.
func (p *Pool) short() []int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return nil
	}
	total := len(p.taken)
	held := map[int64]int{}
	for _, e := range p.taken {
		held[e.projectID]++
	}
	for id, pr := range p.projects {
		total += len(pr.ready)
		held[id] += len(pr.ready)
	}
	var ids []int64
	now := time.Now()
	for id, pr := range p.projects {
		if held[id] < p.cfg.PerProject && total < p.cfg.Max && now.After(pr.skipUntil) && now.Sub(pr.used) < p.cfg.IdleAfter {
			ids = append(ids, id)
			total++
		}
	}
	return ids
}

// startOne starts a process ahead for the project with fresh ids.
func (p *Pool) startOne(ctx context.Context, projectID int64) {
	sid, cid := uuid.NewString(), uuid.NewString()
	o, base, err := p.l.WarmOptions(ctx, projectID, sid, cid, true)
	if err == nil {
		var e *entry
		if e, err = p.spawn(o, base, projectID, cid); err == nil {
			p.log.Info("claude started ahead", "project_id", projectID, "pid", e.w.Pid(), "session_id", sid)
			return
		}
	}
	p.mu.Lock()
	if pr := p.projects[projectID]; pr != nil {
		pr.skipUntil = time.Now().Add(p.cfg.Recheck)
	}
	p.mu.Unlock()
	if !errors.Is(err, launch.ErrNotWarmed) {
		p.log.Warn("start claude ahead", "project_id", projectID, "err", err)
	}
	p.dropTree(projectID, sid)
}

// spawn starts the process and puts it in its project's pool.
func (p *Pool) spawn(o runnerOptions, base string, projectID int64, claudeID string) (*entry, error) {
	w, err := p.sup.StartWarm(o)
	if err != nil {
		return nil, err
	}
	e := &entry{w: w, projectID: projectID, claudeID: claudeID, fp: fingerprint(o), rest: fingerprint(withoutBudget(o)), base: base}
	p.mu.Lock()
	pr := p.projects[projectID]
	if p.stopped || pr == nil { // emptied meanwhile
		p.mu.Unlock()
		p.discard(e, "the project is no longer in use")
		return e, nil
	}
	pr.ready = append(pr.ready, e)
	p.mu.Unlock()
	return e, nil
}

// reap drops processes that died or gave their slot to a run, empties
// the projects nobody used for IdleAfter, and kills processes taken for
// a session whose run never came for them.
func (p *Pool) reap(ctx context.Context) {
	var gone, idle, late []*entry
	var died []death
	now := time.Now()
	p.mu.Lock()
	for id, pr := range p.projects {
		if now.Sub(pr.used) >= p.cfg.IdleAfter {
			idle = append(idle, pr.ready...)
			delete(p.projects, id)
			continue
		}
		kept := pr.ready[:0]
		for _, e := range pr.ready {
			if e.w.Used() || !e.w.Alive() {
				gone = append(gone, e)
				if !e.w.Used() { // it died: Parley kills only through Kill, which marks it used
					pr.deaths++
					pr.skipUntil = now.Add(deathWait(pr.deaths))
					died = append(died, death{e, pr.deaths})
				}
			} else {
				kept = append(kept, e)
			}
		}
		pr.ready = kept
	}
	for sid, e := range p.taken {
		if now.Sub(e.takenAt) >= p.cfg.TakenWait {
			late = append(late, e)
			delete(p.taken, sid)
		}
	}
	p.mu.Unlock()
	for _, d := range died {
		p.log.Warn("claude started ahead died before a session took it; the project's next waits", "project_id", d.projectID,
			"pid", d.w.Pid(), "deaths_in_a_row", d.n, "wait", deathWait(d.n))
	}
	for _, e := range gone {
		p.discard(e, "it ended or gave its slot to a run")
	}
	for _, e := range idle {
		p.discard(e, "the project is idle")
	}
	for _, e := range late {
		p.log.Info("a process taken for a session was not used", "session_id", e.w.SessionID(), "pid", e.w.Pid())
		e.w.Kill() // the worktree is the session's now
	}
}

// death is a process that died before use, and how many died in a row.
type death struct {
	*entry
	n int
}

// empty kills every process ready or taken.
func (p *Pool) empty(ctx context.Context, why string) {
	p.mu.Lock()
	var all, taken []*entry
	for _, pr := range p.projects {
		all = append(all, pr.ready...)
		pr.ready = nil
	}
	for sid, e := range p.taken {
		taken = append(taken, e)
		delete(p.taken, sid)
	}
	p.mu.Unlock()
	for _, e := range all {
		p.discard(e, why)
	}
	for _, e := range taken {
		e.w.Kill()
	}
}

// discard kills a process no session took and removes its worktree.
func (p *Pool) discard(e *entry, why string) {
	if !e.w.Used() {
		p.log.Info("claude started ahead ended", "project_id", e.projectID, "pid", e.w.Pid(), "why", why)
	}
	e.w.Kill()
	if e.base != "" {
		p.dropTree(e.projectID, e.w.SessionID())
	}
}

// dropTree removes a worktree made ahead that no session has.
func (p *Pool) dropTree(projectID int64, sessionID string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.l.DropWarmWorktree(ctx, projectID, sessionID); err != nil {
		p.log.Warn("remove a worktree made ahead", "project_id", projectID, "session_id", sessionID, "err", err)
	}
}
