package runner

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// errClosed refuses work once the supervisor has shut down.
var errClosed = errors.New("parley is shutting down")

// QueuedWork is a prompt (Text, By) or, with InputID set, an answer (Resp)
// to an ask whose process had ended, that waits in the queue for a free slot.
// A drain hands it to the session's next owner, in the order it was given.
type QueuedWork struct {
	Text, By string   // a prompt, and its author's name…
	ByID     int64    // …and user id
	InputID  string   // an answer to this ask…
	Resp     Response // …with this response
	// Item is its item in the kept queue (QueueStore); 0 = in memory only.
	Item int64
	// Parley marks a prompt Parley sends on its own (goOn), on behalf of
	// By: not a member's words, whatever its text says.
	Parley bool
	// Content is a prompt's content blocks after its text (images, a note
	// on attached files: package attach), in memory only; Attached is what
	// its prompt event records of them (no image bytes).
	Content  []json.RawMessage
	Attached json.RawMessage
}

// IsAnswer says the work is an answer to an ask, not a prompt.
func (q QueuedWork) IsAnswer() bool { return q.InputID != "" }

// QueueStore keeps the prompts and answers that wait in the queue for a claude slot
// where a restart, a crash or a shutdown with no other replica does not
// lose them (the store's session_line). Another replica, or this one when
// it starts again, sends what is left there on (Supervisor.Replay).
type QueueStore interface {
	// Keep saves work that waits in the queue for the session; it returns the
	// item's id.
	Keep(ctx context.Context, sessionID string, w QueuedWork) (int64, error)
	// Left removes an item its run has had, or that failed for good, if
	// this replica still serves it (ours).
	Left(ctx context.Context, id int64) (ours bool, err error)
	// Release gives up an item that could not be sent now (a timeout, the
	// database away): a replica sends it on later.
	Release(ctx context.Context, id int64) error
	// Serves says whether this replica still serves the item: not once
	// another replica claimed it (this one had lapsed) or it left.
	Serves(ctx context.Context, id int64) (bool, error)
}

// queueWrite bounds one write of the kept queue.
const queueWrite = 10 * time.Second

// keepQueued saves w, which is about to wait in the queue, unless it is kept
// already (a replayed item, or one that goes back in the queue); it reports
// whether it saved it now.
func (s *Supervisor) keepQueued(ctx context.Context, sessionID string, w *QueuedWork) (bool, error) {
	if s.kept == nil || w == nil || w.Item != 0 {
		return false, nil
	}
	// Once saved it is kept, whatever the caller does meanwhile.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), queueWrite)
	defer cancel()
	id, err := s.kept.Keep(ctx, sessionID, *w)
	if err != nil {
		return false, err
	}
	w.Item = id
	return true, nil
}

// settleQueued settles w's kept item after an attempt to send w ended with
// err. Sent (nil) or failed for good, it leaves the queue. Kept from its run
// by a drain or a shutdown, it stays: it goes on with its session, or when
// this replica has left. Not sent for now (a timeout, the database away),
// or not here (its run was fenced: the session is another replica's), it
// is released, for a replica to send on later.
func (s *Supervisor) settleQueued(w *QueuedWork, err error) {
	if s.kept == nil || w == nil || w.Item == 0 ||
		errors.Is(err, ErrDraining) || errors.Is(err, errClosed) || s.ctx.Err() != nil {
		return
	}
	if RetryLater(err) || errors.Is(err, errFenced) { // fenced: for the session's new owner
		s.releaseQueued(w)
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, queueWrite)
	defer cancel()
	if _, lerr := s.kept.Left(ctx, w.Item); lerr != nil {
		// Kept, it would be sent again after a restart, unless it is a
		// prompt whose event is in the log (store.ClaimQueue).
		s.log.Error("remove a prompt or an answer from the kept line", "line", w.Item, "err", lerr)
	}
}

// releaseQueued gives up w's kept item: any replica, this one too, sends it
// on later (SessionsWithOrphanedQueue).
func (s *Supervisor) releaseQueued(w *QueuedWork) {
	if s.kept == nil || w == nil || w.Item == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(s.ctx), queueWrite)
	defer cancel()
	if err := s.kept.Release(ctx, w.Item); err != nil {
		s.log.Error("release a prompt or an answer in the kept line", "line", w.Item, "err", err)
	}
}

// RetryLater says a send failed for now only: it may succeed later.
func RetryLater(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || errors.Is(err, ErrUnavailable)
}

// Replay gives the session's run a prompt or an answer that waited in
// line on a replica that stopped (w.Item is its kept item): at once when a
// process is live or a slot is free, else in the queue again. An answer whose
// ask has closed meanwhile is dropped (ErrNotPending).
func (s *Supervisor) Replay(ctx context.Context, sessionID string, start Starter, w QueuedWork) error {
	var err error
	if w.IsAnswer() {
		err = s.answer(ctx, sessionID, start, w)
	} else {
		err = s.prompt(ctx, sessionID, start, w)
	}
	if errors.Is(err, ErrNotPending) || errors.Is(err, ErrNotFound) {
		s.settleQueued(&w, nil)
	}
	return err
}

// queuedItem is w's kept queue item (0 = none, or no work).
func queuedItem(w *QueuedWork) int64 {
	if w != nil {
		return w.Item
	}
	return 0
}

// claimedElsewhere leaves out of jobs, given a slot, those whose kept item
// this replica no longer serves: it lapsed while they waited (a long
// pause), and the replica that took its queue over has sent them. One whose
// item cannot be checked now is kept.
func (s *Supervisor) claimedElsewhere(ctx context.Context, sessionID string, jobs []job) []job {
	if s.kept == nil {
		return jobs
	}
	var kept []job
	for _, j := range jobs {
		if j.work != nil && j.work.Item != 0 {
			ours, err := s.kept.Serves(ctx, j.work.Item)
			if err != nil {
				s.log.Warn("check that a queued prompt or answer is still this replica's", "session_id", sessionID, "line", j.work.Item, "err", err)
			} else if !ours {
				s.log.Info("queued work was sent on by another replica while this one lapsed: not sent here", "session_id", sessionID, "line", j.work.Item)
				continue
			}
		}
		kept = append(kept, j)
	}
	return kept
}
