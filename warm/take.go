package warm

import (
	"context"
	"errors"
	"time"

	"parley/launch"
	"parley/runner"
)

type runnerOptions = runner.Options

// IDs are the ids a process started ahead has: a session taking it is
// created with them.
type IDs struct {
	SessionID, ClaudeSessionID string
}

// Take hands a process ready for the project to a new session, which
// must be created with the returned ids; false when none is ready. The
// process is the session's (Starter) for TakenWait; no other session
// gets it. Taking says the project is in use.
func (p *Pool) Take(projectID int64) (IDs, bool) {
	if p == nil || p.cfg.PerProject <= 0 {
		return IDs{}, false
	}
	defer p.poke() // refill once it is adopted, or in its place
	p.mu.Lock()
	defer p.mu.Unlock()
	pr := p.projects[projectID]
	if pr == nil {
		pr = &project{}
		p.projects[projectID] = pr
	}
	pr.used = time.Now()
	for len(pr.ready) > 0 {
		e := pr.ready[0]
		pr.ready = pr.ready[1:]
		if e.w.Used() || p.stopped {
			continue
		}
		e.takenAt = time.Now()
		pr.deaths = 0
		// The next one starts a little later: its start (about 0.7 s of
		// CPU) must not slow the first turn of the session that took this
		// one (measured: p50 1.0 s with the refill at once, 0.2 s after it).
		pr.skipUntil = e.takenAt.Add(p.cfg.RefillDelay)
		p.taken[e.w.SessionID()] = e
		// The session's start takes a slot of its own; until then the
		// process counts in the project's share, so none starts in its place.
		e.w.Release()
		return IDs{SessionID: e.w.SessionID(), ClaudeSessionID: e.claudeID}, true
	}
	return IDs{}, false
}

// Drop kills the process taken for a session that was not created.
func (p *Pool) Drop(sessionID string) {
	if e := p.claim(sessionID); e != nil {
		p.discard(e, "its session was not created")
	}
}

// claim removes and returns the process taken for the session, if any.
func (p *Pool) claim(sessionID string) *entry {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.taken[sessionID]
	delete(p.taken, sessionID)
	return e
}

// Starter is base for a session that took a process ahead: the run
// adopts that process when base's options (read now) reach a process
// exactly as the ones it was started with, and the base it was branched
// from has not moved; else the process is killed and the start is cold.
// A process is adopted at most once: the first start of the session
// claims it.
func (p *Pool) Starter(sessionID string, base runner.Starter) runner.Starter {
	if p == nil {
		return base
	}
	return func(ctx context.Context) (runner.Options, error) {
		e := p.claim(sessionID)
		if e == nil {
			return base(ctx)
		}
		defer p.poke()
		if e.base != "" {
			if now, err := p.l.WarmBase(ctx, e.projectID); err != nil || now != e.base {
				// Its worktree is behind: the cold start makes the session's anew.
				p.discard(e, "the base branch moved")
				return p.cold(ctx, sessionID, base)
			}
		}
		o, err := base(ctx)
		if err != nil || o.Resume {
			p.wg.Go(e.w.Kill) // off the start's path; the worktree is the session's
			return o, err
		}
		if fp := fingerprint(o); fp != e.fp {
			p.log.Info("claude started ahead not used: "+staleWhy(o, e), "session_id", sessionID, "pid", e.w.Pid())
			p.wg.Go(e.w.Kill)
			return p.freshen(ctx, sessionID, o)
		}
		o.Warm = e.w
		return o, nil
	}
}

// cold is the start of a session without the process taken for it.
func (p *Pool) cold(ctx context.Context, sessionID string, base runner.Starter) (runner.Options, error) {
	o, err := base(ctx)
	if err != nil {
		return o, err
	}
	return p.freshen(ctx, sessionID, o)
}

// freshen gives o, the cold start of a session that took a process ahead
// and does not use it, a new CLI session id: the process ahead may have
// written a conversation under the old one (its prime), and the CLI
// refuses to start a --session-id in use.
func (p *Pool) freshen(ctx context.Context, sessionID string, o runner.Options) (runner.Options, error) {
	id, err := p.l.FreshConversation(ctx, sessionID)
	if err != nil {
		return o, err
	}
	o.ClaudeSessionID = id
	return o, nil
}

// staleWhy says why a process ahead is not what a start gets now: only
// its spending limit moved (the project spent since), or its settings.
func staleWhy(o runner.Options, e *entry) string {
	if fingerprint(withoutBudget(o)) == e.rest {
		return "the project's spending since changed its budget"
	}
	return "the settings changed"
}

// recheckAll kills the processes ahead that a start would no longer get:
// their project's settings, ask or MCP settings, limits or instructions
// changed, its base branch moved, or it spent since under a daily limit
// (then its next process waits Config.SpendRefill).
func (p *Pool) recheckAll(ctx context.Context) {
	p.mu.Lock()
	var check []*entry
	for _, pr := range p.projects {
		check = append(check, pr.ready...)
	}
	p.mu.Unlock()
	for _, e := range check {
		o, base, err := p.l.WarmOptions(ctx, e.projectID, e.w.SessionID(), e.claudeID, false)
		if err == nil && fingerprint(o) == e.fp && base == e.base {
			continue
		}
		if !p.unready(e) { // taken meanwhile
			continue
		}
		switch {
		case errors.Is(err, launch.ErrNotWarmed):
			p.discard(e, "the project reached its daily spending limit")
		case err == nil && base == e.base && fingerprint(withoutBudget(o)) == e.rest:
			p.discard(e, "the project's spending since changed its budget")
			p.holdRefill(e.projectID, p.cfg.SpendRefill)
		default:
			p.discard(e, "the project's settings changed")
		}
	}
}

// holdRefill has the project's next process wait d.
func (p *Pool) holdRefill(projectID int64, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if pr := p.projects[projectID]; pr != nil && pr.skipUntil.Before(time.Now().Add(d)) {
		pr.skipUntil = time.Now().Add(d)
	}
}

// unready takes e out of its project's ready processes; false when it was
// not there (taken, or gone).
func (p *Pool) unready(e *entry) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	pr := p.projects[e.projectID]
	if pr == nil {
		return false
	}
	for i, x := range pr.ready {
		if x == e {
			pr.ready = append(pr.ready[:i], pr.ready[i+1:]...)
			return true
		}
	}
	return false
}
