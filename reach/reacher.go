package reach

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"sync"
	"time"

	"parley/runner"
	"parley/store"
)

// The stages of an ask's reach. Each is claimed in Postgres before it
// runs (store.ClaimReachStage), so whichever replica gets there first
// does it, once.
const (
	stageFirst    = 1  // the first people, the Slack channel, the webhook
	stageEscalate = 2  // the rest of the members
	stageClosed   = 9  // the ask closed: take the notifications back
	stageLooked   = 10 // + stage: "suppressed" recorded for it
)

// Config tunes a Reacher.
type Config struct {
	// BaseURL is where people reach Parley (PARLEY_PUBLIC_URL): links in
	// notifications, e-mail and Slack point there.
	BaseURL string
	// TokenTTL is how long an answer token works (default 24 h).
	TokenTTL time.Duration
	// Every is how often the asks are looked over without a poke
	// (default 1 s): escalations fall due, pages stop looking.
	Every time.Duration
}

// Reacher brings each ask to the people who may answer it.
type Reacher struct {
	st   *store.Store
	ch   Channels
	cfg  Config
	log  *slog.Logger
	wake chan struct{}
}

// New returns a Reacher; Run makes it work.
func New(st *store.Store, ch Channels, cfg Config, log *slog.Logger) *Reacher {
	if cfg.TokenTTL <= 0 {
		cfg.TokenTTL = 24 * time.Hour
	}
	if cfg.Every <= 0 {
		cfg.Every = time.Second
	}
	return &Reacher{st: st, ch: ch, cfg: cfg, log: log, wake: make(chan struct{}, 1)}
}

// Channels are the Reacher's ways out.
func (r *Reacher) Channels() Channels { return r.ch }

// BaseURL is where people reach Parley.
func (r *Reacher) BaseURL() string { return r.cfg.BaseURL }

// Poke makes the Reacher look at the asks now: an ask opened or closed.
func (r *Reacher) Poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Run looks over the asks at every poke and every cfg.Every until ctx
// ends.
func (r *Reacher) Run(ctx context.Context) {
	t := time.NewTicker(r.cfg.Every)
	defer t.Stop()
	for {
		r.Once(ctx)
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
		case <-t.C:
		}
	}
}

// Once does what is due for every ask now.
func (r *Reacher) Once(ctx context.Context) {
	asks, err := r.st.ReachAsks(ctx, stageEscalate, stageClosed)
	if err != nil {
		if ctx.Err() == nil {
			r.log.Warn("reach: reading the asks", "err", err)
		}
		return
	}
	now := time.Now()
	// The asks one at a time cost each about a dozen round trips to
	// Postgres before the first push: a few at once keep a burst of asks
	// from queueing behind each other. Each stage is claimed in Postgres,
	// so two workers (or replicas) never reach for the same stage.
	next := make(chan store.ReachAsk)
	var wg sync.WaitGroup
	for range min(onceWorkers, len(asks)) {
		wg.Go(func() {
			for a := range next {
				if a.Status != "pending" {
					r.closed(ctx, a)
					continue
				}
				r.pending(ctx, a, now)
			}
		})
	}
	for _, a := range asks {
		next <- a
	}
	close(next)
	wg.Wait()
}

// onceWorkers is how many asks Once works on at a time.
const onceWorkers = 8

// pending does the stages of an open ask that are due, unless someone
// who may answer is looking at it.
func (r *Reacher) pending(ctx context.Context, a store.ReachAsk, now time.Time) {
	due := []int{stageFirst}
	pr, err := r.st.ProjectReachOf(ctx, a.ProjectID)
	if err != nil {
		r.log.Warn("reach", "input_id", a.ID, "err", err)
		return
	}
	if pr.EscalateAfter > 0 && now.Sub(a.CreatedAt) >= time.Duration(pr.EscalateAfter)*time.Second {
		due = append(due, stageEscalate)
	}
	due = slices.DeleteFunc(due, func(s int) bool { return slices.Contains(a.Stages, int16(s)) })
	if len(due) == 0 {
		return
	}
	p, err := r.people(ctx, a, pr)
	if err != nil {
		r.log.Warn("reach", "input_id", a.ID, "err", err)
		return
	}
	if looking, err := r.st.LookingAt(ctx, a.ProjectID, a.SessionID, p.answerIDs()); err != nil || len(looking) > 0 {
		if err == nil {
			r.suppressed(ctx, a, due, p.names(looking))
		}
		return
	}
	for _, s := range due {
		if ok, err := r.st.ClaimReachStage(ctx, a.ID, s); err != nil || !ok {
			continue
		}
		r.stage(ctx, a, pr, p, s)
	}
}

// suppressed records, once per stage, that nobody was reached because
// someone was looking.
func (r *Reacher) suppressed(ctx context.Context, a store.ReachAsk, due []int, who string) {
	for _, s := range due {
		if ok, err := r.st.ClaimReachStage(ctx, a.ID, stageLooked+s); err != nil || !ok {
			continue
		}
		r.record(ctx, store.Delivery{InputID: a.ID, Channel: "push", Target: who, Outcome: "suppressed",
			Detail: who + " had the ask on screen"})
	}
}

// stage reaches the people of stage s.
func (r *Reacher) stage(ctx context.Context, a store.ReachAsk, pr store.ProjectReach, p people, s int) {
	ask, err := r.ask(ctx, a)
	if err != nil {
		r.log.Warn("reach", "input_id", a.ID, "err", err)
		return
	}
	switch s {
	case stageFirst:
		for _, m := range p.first {
			r.person(ctx, ask, m, s)
		}
		r.chat(ctx, ask, pr)
	case stageEscalate:
		for _, m := range p.rest {
			r.person(ctx, ask, m, s)
		}
		for _, m := range p.first {
			r.mailWithoutDevice(ctx, ask, m)
		}
	}
}

// ask loads what a message is made from.
func (r *Reacher) ask(ctx context.Context, a store.ReachAsk) (Ask, error) {
	sess, err := r.st.GetSession(ctx, a.SessionID)
	if err != nil {
		return Ask{}, err
	}
	proj, err := r.st.GetProject(ctx, a.ProjectID)
	if err != nil {
		return Ask{}, err
	}
	var p runner.AskPayload
	if err := json.Unmarshal(a.Payload, &p); err != nil {
		return Ask{}, err
	}
	p.Kind = a.Kind
	return Ask{InputID: a.ID, SessionID: a.SessionID, Kind: a.Kind, Payload: p, Project: proj.Name, Session: sess.Title}, nil
}

func (r *Reacher) record(ctx context.Context, d store.Delivery) {
	if err := r.st.AddDelivery(ctx, d); err != nil {
		r.log.Warn("reach: recording a delivery", "input_id", d.InputID, "err", err)
	}
}
