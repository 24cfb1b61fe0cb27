package sessiondelete

import (
	"context"
	"errors"
	"time"

	"parley/audit"
	"parley/store"
)

// SweepEvery is how often retention looks for idle sessions: retention
// counts in days, so an hour late is on time.
const SweepEvery = time.Hour

// sweepFirst is how long after start the first sweep runs: not at once,
// while a restarting server has other work.
const sweepFirst = 2 * time.Minute

// sweepBatch bounds the sessions one sweep deletes; the next sweep goes on.
const sweepBatch = 200

// retentionActor is who retention's deletes are by, in the trail.
var retentionActor = Actor{Name: "retention", Surface: audit.System}

// Run sweeps every SweepEvery until ctx ends.
func (d *Deleter) Run(ctx context.Context) error {
	t := time.NewTimer(sweepFirst)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if n, err := d.Sweep(ctx); err != nil && ctx.Err() == nil {
			d.log.Warn("retention sweep", "deleted", n, "err", err)
		}
		t.Reset(SweepEvery)
	}
}

// Sweep deletes, on one replica at a time (the others skip while one
// sweeps), the sessions idle for longer than their project's retention,
// through the path an owner's delete takes, and finishes the cleanup of
// deletes that left files behind. A session with a live run, a pending
// ask or work in line is never deleted, nor one that became active since
// it was listed (store.DeleteSession checks again). It returns how many
// it deleted.
func (d *Deleter) Sweep(ctx context.Context) (int, error) {
	release, ok, err := d.st.TryRetentionLock(ctx)
	if err != nil || !ok {
		return 0, err
	}
	defer release()
	list, err := d.st.IdleSessions(ctx, sweepBatch)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, s := range list {
		deleted, err := d.deleteIdle(ctx, s.ID)
		if err != nil {
			return n, err
		}
		if deleted {
			n++
		}
	}
	if n > 0 {
		d.stops.AccessChanged(ctx) // once for the batch
		d.log.Info("retention deleted idle sessions", "deleted", n)
	}
	return n, d.retryCleanups(ctx)
}

// deleteIdle deletes one session retention listed, if it is still idle.
func (d *Deleter) deleteIdle(ctx context.Context, sessionID string) (bool, error) {
	release, err := d.st.LockWorktree(ctx, sessionID)
	if err != nil {
		return false, err
	}
	defer release()
	tomb, err := d.st.DeleteSession(ctx, sessionID, retentionActor.Name, true)
	switch {
	case errors.Is(err, store.ErrSessionActive), errors.Is(err, store.ErrNotFound):
		return false, nil
	case err != nil:
		return false, err
	}
	d.finish(ctx, tomb, retentionActor)
	return true, nil
}

// retryCleanups finishes the cleanup of deleted sessions that left files
// behind (git refused, the server stopped midway), and goes over those
// deleted within the last day once more: a run whose start had read the
// session just before its delete ends, and a worktree it made goes.
func (d *Deleter) retryCleanups(ctx context.Context) error {
	list, err := d.st.DeletedSessionsToClean(ctx, sweepBatch)
	if err != nil {
		return err
	}
	for _, tomb := range list {
		if tomb.CleanedAt != nil {
			d.stops.StopRun(ctx, tomb.ID)
		}
		if err := d.cleanLocked(ctx, tomb, tomb.CleanedAt != nil); err != nil {
			d.log.Warn("clean up a deleted session", "session_id", tomb.ID, "err", err)
		}
	}
	return nil
}
