// Package sessiondelete deletes sessions: an owner's delete from the
// session page, and retention's, which deletes the sessions of a project
// that have been idle for longer than its owner allows. Both take one
// path: no run of the session starts meanwhile (its worktree lock), its
// run ends on whichever replica runs it, its rows go in one transaction
// that leaves a tombstone, its worktree, branch and the CLI's transcript
// are removed, the audit trail records it, and the pages still open on it
// are told it is gone.
package sessiondelete

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"parley/audit"
	"parley/store"
	"parley/transcript"
)

// Stops ends a session's run and has every open page check its access
// again, on every replica (server.Stops, cluster.Node).
type Stops interface {
	StopRun(ctx context.Context, sessionID string)
	AccessChanged(ctx context.Context)
}

// Disk is where a project's sessions leave files: its repository's
// worktrees and branches, and the CLI's config dir.
type Disk interface {
	// RemoveWorktree removes the session's worktree, if any, and deletes
	// its branch, as the project's runs would (their uid or sandbox).
	RemoveWorktree(ctx context.Context, p store.Project, sessionID, branch string) error
	// ConfigDir is the CLAUDE_CONFIG_DIR of p's runs.
	ConfigDir(p store.Project) string
}

// Actor is who deletes, for the audit trail.
type Actor struct {
	ID      int64
	Name    string
	From    string // the client address
	Surface string // audit.Page, audit.System...
}

// Result is what a delete did.
type Result struct {
	Session store.DeletedSession
	Already bool  // the session was deleted before this call
	Cleanup error // what was left on disk and why (finished by the next delete or sweep); nil = all gone
}

// ErrBusy says the session's process did not end in time: nothing was
// deleted.
var ErrBusy = errors.New("the session's process did not end in time")

// Deleter deletes sessions.
type Deleter struct {
	st       *store.Store
	stops    Stops
	disk     Disk
	trail    *audit.Log
	log      *slog.Logger
	stopWait time.Duration
}

// New returns a Deleter over st that ends runs through stops and removes
// files through disk.
func New(st *store.Store, stops Stops, disk Disk, log *slog.Logger) *Deleter {
	return &Deleter{st: st, stops: stops, disk: disk, trail: audit.New(st), log: log, stopWait: 15 * time.Second}
}

// Delete deletes the session for by, who may (the caller checked). A
// session deleted before is not an error: its cleanup is finished if it
// had not, and Result.Already says so. A session that never existed is
// store.ErrNotFound.
func (d *Deleter) Delete(ctx context.Context, sessionID string, by Actor) (Result, error) {
	if _, err := d.st.GetSession(ctx, sessionID); errors.Is(err, store.ErrNotFound) {
		return d.again(ctx, sessionID)
	} else if err != nil {
		return Result{}, err
	}
	// No run of the session starts on any replica until the worktree is
	// gone (a start waits for the lock, then finds no session); one
	// started meanwhile in a session without a branch yet is stopped
	// again after the rows are gone.
	release, err := d.st.LockWorktree(ctx, sessionID)
	if err != nil {
		return Result{}, err
	}
	defer release()
	if err := d.stopRun(ctx, sessionID); err != nil {
		return Result{}, err
	}
	tomb, err := d.st.DeleteSession(ctx, sessionID, by.Name, false)
	if errors.Is(err, store.ErrNotFound) { // another delete won
		release() // again takes it to finish that one's cleanup (release is once)
		return d.again(ctx, sessionID)
	}
	if err != nil {
		return Result{}, err
	}
	res := d.finish(ctx, tomb, by)
	d.stops.AccessChanged(ctx) // open pages close: "This session was deleted."
	return res, nil
}

// again is Delete of a session deleted before: its cleanup is finished.
func (d *Deleter) again(ctx context.Context, sessionID string) (Result, error) {
	tomb, err := d.st.DeletedSessionOf(ctx, sessionID)
	if err != nil {
		return Result{}, err
	}
	res := Result{Session: tomb, Already: true}
	if tomb.CleanedAt == nil {
		res.Cleanup = d.cleanLocked(ctx, tomb, false)
	}
	return res, nil
}

// cleanLocked is clean under the session's worktree lock: a delete still
// cleaning on another replica finishes first. Unless again, a cleanup
// finished meanwhile is not done twice.
func (d *Deleter) cleanLocked(ctx context.Context, tomb store.DeletedSession, again bool) error {
	release, err := d.st.LockWorktree(ctx, tomb.ID)
	if err != nil {
		return err
	}
	defer release()
	if now, err := d.st.DeletedSessionOf(ctx, tomb.ID); err != nil || (now.CleanedAt != nil && !again) {
		return err
	}
	return d.clean(ctx, tomb)
}

// finish is what follows the rows' delete: any run started meanwhile
// ends, the files go, the trail records it.
func (d *Deleter) finish(ctx context.Context, tomb store.DeletedSession, by Actor) Result {
	d.stops.StopRun(ctx, tomb.ID)
	res := Result{Session: tomb, Cleanup: d.clean(ctx, tomb)}
	detail := map[string]any{"reason": tomb.Reason, "branch": tomb.Branch}
	if res.Cleanup != nil {
		detail["cleanup_error"] = res.Cleanup.Error()
	}
	e := audit.Entry{ActorID: by.ID, ActorName: by.Name, From: by.From, Surface: by.Surface, Action: audit.SessionDelete,
		ProjectID: tomb.ProjectID, SessionID: tomb.ID, Target: tomb.Title, Detail: detail}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := d.trail.Record(actx, e); err != nil {
		d.log.Error("audit trail: a session delete went unrecorded", "session_id", tomb.ID, "err", err)
	}
	d.log.Info("session deleted", "session_id", tomb.ID, "project_id", tomb.ProjectID, "reason", tomb.Reason,
		"by", by.Name, "branch", tomb.Branch, "cleanup_error", res.Cleanup)
	return res
}

// clean removes the deleted session's worktree, branch and transcript,
// and records that they are gone once all are.
func (d *Deleter) clean(ctx context.Context, tomb store.DeletedSession) error {
	p, err := d.st.GetProject(ctx, tomb.ProjectID)
	if err != nil {
		return fmt.Errorf("clean up deleted session %s: %w", tomb.ID, err)
	}
	errWT := d.disk.RemoveWorktree(ctx, p, tomb.ID, tomb.Branch)
	_, errTr := transcript.Remove(d.disk.ConfigDir(p), tomb.ClaudeSessionID)
	if err := errors.Join(errWT, errTr); err != nil {
		return fmt.Errorf("clean up deleted session %s: %w", tomb.ID, err)
	}
	return d.st.MarkSessionCleaned(ctx, tomb.ID)
}

// stopRun ends the session's run wherever it lives and waits until the
// log shows none of it open, so that no claude writes into the worktree
// or the log while they go. A run still starting when the stop went out
// (a first message: its start takes no lock) is stopped again once it
// shows open.
func (d *Deleter) stopRun(ctx context.Context, sessionID string) error {
	d.stops.StopRun(ctx, sessionID)
	wctx, cancel := context.WithTimeout(ctx, d.stopWait)
	defer cancel()
	for i := 1; ; i++ {
		open, err := d.st.HasOpenRun(wctx, sessionID)
		if err == nil && !open {
			return nil
		}
		if open && i%10 == 0 { // every half second
			d.stops.StopRun(wctx, sessionID)
		}
		if err != nil && wctx.Err() == nil {
			return err
		}
		select {
		case <-wctx.Done():
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return ErrBusy
		case <-time.After(50 * time.Millisecond):
		}
	}
}
