// Package runstore adapts the store to what a run and the model gateway need:
// the runner's Journal (events, asks, runs, deliveries), the expiry of
// detached asks, and the gateway's usage sink with a session's budget.
package runstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"parley/metrics"
	"parley/runner"
	"parley/store"
)

// journal adapts the store to what a run needs (runner.Journal).
type journal struct {
	st      *store.Store
	metrics *metrics.Metrics
}

// NewJournal returns the runner.Journal backed by st.
func NewJournal(st *store.Store) runner.Journal { return journal{st: st} }

// NewMeteredJournal is NewJournal that times its event writes in m.
func NewMeteredJournal(st *store.Store, m *metrics.Metrics) runner.Journal {
	return journal{st: st, metrics: m}
}

// StoreEvent is a run's event as the store keeps it.
func StoreEvent(e runner.Event) store.Event {
	return store.Event{SessionID: e.SessionID, Seq: e.Seq, Type: e.Type, Payload: e.Payload, CreatedAt: e.CreatedAt}
}

func (j journal) LastSeq(ctx context.Context, sessionID string) (int64, error) {
	n, err := j.st.LastSeq(ctx, sessionID)
	return n, j.dbErr(err)
}

func (j journal) Append(ctx context.Context, e runner.Event) error {
	start := time.Now()
	err := j.st.AppendEvent(ctx, StoreEvent(e))
	if err == nil {
		j.metrics.EventsWritten(1, time.Since(start))
	}
	return j.dbErr(err)
}

func (j journal) OpenInput(ctx context.Context, in runner.Input, e runner.Event) error {
	return j.dbErr(j.st.OpenInput(ctx, store.Input{ID: in.ID, SessionID: in.SessionID, RunID: in.RunID,
		Kind: in.Kind, Payload: in.Payload, Deadline: in.Deadline}, StoreEvent(e)))
}

func (j journal) ResolveInput(ctx context.Context, id, status string, answer json.RawMessage, by string, e runner.Event) error {
	_, err := j.st.ResolveInput(ctx, id, status, answer, by, StoreEvent(e))
	switch {
	case errors.Is(err, store.ErrNotPending):
		return runner.ErrNotPending
	case errors.Is(err, store.ErrNotFound):
		return runner.ErrNotFound
	}
	return j.dbErr(err)
}

func (j journal) LoadInput(ctx context.Context, id string) (runner.Input, error) {
	in, err := j.st.GetInput(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return runner.Input{}, runner.ErrNotFound
	}
	if err != nil {
		return runner.Input{}, j.dbErr(err)
	}
	return runner.Input{ID: in.ID, SessionID: in.SessionID, RunID: in.RunID, Kind: in.Kind, Status: in.Status,
		Payload: in.Payload, Deadline: in.Deadline}, nil
}

func (j journal) RunStarted(ctx context.Context, sessionID string, pid int) (int64, error) {
	id, err := j.st.StartRun(ctx, sessionID, pid)
	return id, j.dbErr(err)
}

func (j journal) RunEnded(ctx context.Context, runID int64, exitCode int, reason string) error {
	return j.dbErr(j.st.EndRun(ctx, runID, exitCode, reason))
}

func (j journal) SessionChanged(ctx context.Context, sessionID string, c runner.SessionChange) error {
	return j.dbErr(j.sessionChanged(ctx, sessionID, c))
}

func (j journal) sessionChanged(ctx context.Context, sessionID string, c runner.SessionChange) error {
	if c.NewClaudeSessionID != "" {
		if err := j.st.SetClaudeSessionID(ctx, sessionID, c.NewClaudeSessionID); err != nil {
			return err
		}
	}
	if c.ClaudeStarted {
		if err := j.st.MarkClaudeStarted(ctx, sessionID); err != nil {
			return err
		}
	}
	if c.Status != "" {
		if err := j.st.SetSessionStatus(ctx, sessionID, c.Status); err != nil {
			return err
		}
	}
	if c.CostUSD != 0 || c.Turns != 0 {
		return j.st.AddSessionUsage(ctx, sessionID, c.CostUSD, c.Turns)
	}
	return nil
}

// AppendBatch implements runner.BatchJournal: one statement, one commit.
func (j journal) AppendBatch(ctx context.Context, evs []runner.Event) error {
	list := make([]store.Event, len(evs))
	for i, e := range evs {
		list[i] = StoreEvent(e)
	}
	start := time.Now()
	err := j.st.AppendEvents(ctx, list)
	if err == nil {
		j.metrics.EventsWritten(len(list), time.Since(start))
	}
	return j.dbErr(err)
}

// dbErr marks an error that means the database could not take the
// operation now with runner.ErrUnavailable, so the run waits for the
// database instead of dropping the write, and counts it.
func (j journal) dbErr(err error) error {
	if !store.Unavailable(err) {
		return err
	}
	j.metrics.DatabaseUnavailable()
	return fmt.Errorf("%w: %w", runner.ErrUnavailable, err)
}
