package runner

import (
	"context"
	"errors"
	"fmt"
)

// maxBatch bounds the lines one write of the log carries.
const maxBatch = 1024

// lineBuffer is how many decoded stdout lines may wait for the loop: what
// waits when the loop comes back from a write is the next batch.
const lineBuffer = 4096

// BatchJournal is a Journal that can append several events in one
// transaction. Without it a batch is written one event at a time.
type BatchJournal interface {
	AppendBatch(ctx context.Context, evs []Event) error
}

// handleLines handles first and every line already waiting behind it as
// one batch: their events are written with one insert and one commit, then
// published. It reports whether stdout reached its end.
func (r *Run) handleLines(ctx context.Context, first Line, lines <-chan Line) (eof bool) {
	r.batching = true
	r.handleLine(ctx, first)
	for n := 1; n < maxBatch && !eof; n++ {
		select {
		case l, ok := <-lines:
			if !ok {
				eof = true
				continue
			}
			r.handleLine(ctx, l)
		default:
			n = maxBatch // nothing else waits: write what we have
		}
	}
	r.batching = false
	r.flush(ctx)
	return eof
}

// flush writes the batched events, then publishes them: browsers see only
// what the log holds. While the database is unavailable it waits for it
// (persist), so the loop reads no more output meanwhile. When the batch fails (a line Postgres refuses, such
// as a \u0000 in a string) the events are written one by one from the
// log's real end, each refused one replaced by a malformed event that says
// why, so nothing is lost silently.
func (r *Run) flush(ctx context.Context) {
	if len(r.batch) == 0 {
		return
	}
	evs, batching := r.batch, r.batching
	r.batch, r.batching = nil, false
	defer func() { r.batching = batching }()
	first, last := evs[0].Seq, evs[len(evs)-1].Seq
	err := r.persist(ctx, func(ctx context.Context) error { return r.appendBatch(ctx, evs) }, r.seqCommitted(first, last))
	if err == nil {
		r.publishBatch(evs)
		return
	}
	if errors.Is(err, errFenced) {
		return // the session is another replica's now
	}
	if unavailable(err) {
		// Only a run being stopped gives up waiting for the database.
		r.log.Error("events lost: the run was stopped while the database was unavailable", "events", len(evs), "err", err)
		r.seq = first - 1
		return
	}
	r.log.Warn("write a batch of events; writing them one by one", "events", len(evs), "err", err)
	r.resync(ctx)
	for _, e := range evs {
		if err := r.record(ctx, e.Type, e.Payload); err != nil {
			if errors.Is(err, errFenced) {
				return
			}
			r.log.Warn("store claude output", "type", e.Type, "err", err)
			m := malformed(e.Payload, fmt.Errorf("could not be stored: %w", err))
			if err := r.record(ctx, TypeMalformed, m.Raw); err != nil {
				r.log.Error("record unstorable line", "err", err)
			}
		}
	}
}

// BatchPublisher is a Publisher that takes a written batch at once.
type BatchPublisher interface {
	PublishBatch(evs []Event)
}

func (r *Run) publishBatch(evs []Event) {
	if bp, ok := r.pub.(BatchPublisher); ok && len(evs) > 1 {
		bp.PublishBatch(evs)
		return
	}
	for _, e := range evs {
		r.pub.Publish(e)
	}
}

func (r *Run) appendBatch(ctx context.Context, evs []Event) error {
	if bj, ok := r.journal.(BatchJournal); ok {
		return bj.AppendBatch(ctx, evs)
	}
	for _, e := range evs {
		if err := r.journal.Append(ctx, e); err != nil {
			return err
		}
	}
	return nil
}
