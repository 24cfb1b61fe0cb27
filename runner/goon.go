package runner

import (
	"context"
	"strings"
)

// A drain whose grace ends while a turn runs stops the session's process
// (Drain). The CLI then keeps the turn's prompt but none of its unfinished
// reply, and marks it answered ("No response requested."), and it forgets
// the turns it had queued behind it: measured with claude 2.1.328, a
// --resume after SIGTERM shows the model the cut prompt, that note, and no
// queued prompt. So the drain hands the session over with one more prompt
// (goOn): the CLI is told to go on where it stopped, and given the
// messages it had not read yet. It is kept in the queue (keepGoOn), so the next
// replica to lease the session sends it, this one too when it starts
// again; nothing the team sent is lost to a restart. A turn the CLI had not
// begun is carried like the queued ones (its prompt never reached the
// transcript); one that was being stopped does not go on; nor does one
// whose owed answer arrives as the next turn anyway (deliverOwed).

// cutNotice is what the page says when a drain cuts a turn off.
const cutNotice = "Parley is restarting, and Claude's turn did not end in time: Parley stopped it. " +
	"Claude is asked to go on where it left off as soon as the session runs again."

// SentByParley opens every prompt Parley sends on its own, for Claude to
// read; what marks one as Parley's is QueuedWork.Parley.
const SentByParley = "(Sent by Parley.) "

// goOnText opens the prompt that has Claude go on with a turn a drain cut off.
const goOnText = SentByParley + "Parley restarted while you were working, and stopped you. " +
	"Go on where you left off."

// neverReached introduces the turns the CLI never read.
const neverReached = "messages sent to you meanwhile never reached you:"

// unreadText opens the prompt that carries only turns the CLI never read.
const unreadText = SentByParley + "Parley restarted, and these " + neverReached

// cutOff is what a drain that ends the run now cuts off (a is what the
// run is doing): the running turn, if Claude is to go on with it (the CLI
// began it, nobody was stopping it, and no answer owed to it is to arrive
// as the next turn), and the turns the CLI never read, by members who may
// still send them. It runs on the loop.
func (r *Run) cutOff(a int32) (running *turnAuthor, unread []turnAuthor) {
	if len(r.inFlight) == 0 {
		return nil, nil
	}
	first, rest := r.inFlight[0], r.inFlight[1:]
	switch {
	case first.n != r.begun: // written, but the CLI never read it
		rest = r.inFlight
	case a == activityWorking && first.n != r.interrupted && len(r.awaiting) == 0:
		running = &first
	}
	for _, t := range rest {
		if _, barred := r.barred[t.ID]; t.ID == 0 || !barred {
			unread = append(unread, t)
		}
	}
	return running, unread
}

// goOn is the prompt that goes on with what a drain cut off: with the
// running turn, on behalf of its author, if there is one to go on with
// (cutOff); and with the turns the CLI never read, with their authors.
// ok is false when there is nothing to go on with.
func goOn(running *turnAuthor, unread []turnAuthor) (w QueuedWork, ok bool) {
	var b strings.Builder
	var by Author
	switch {
	case running != nil:
		by = running.Author
		b.WriteString(goOnText)
		if len(unread) > 0 {
			b.WriteString(" These " + neverReached)
		}
	case len(unread) > 0:
		by = unread[0].Author
		b.WriteString(unreadText)
	default:
		return QueuedWork{}, false
	}
	for _, t := range unread {
		b.WriteString("\n\n")
		if t.Name != "" {
			b.WriteString("From " + t.Name + ":\n")
		}
		b.WriteString(t.text)
	}
	return QueuedWork{Text: b.String(), By: by.Name, ByID: by.ID, Parley: true}, true
}

// keepGoOn keeps w in the queue for the session, released: the replica that
// takes the session next sends it before anything sent after it (see
// above). If it cannot be kept, w stays in memory (Item 0): the drain
// gives it to another replica, if one is alive.
func (s *Supervisor) keepGoOn(ctx context.Context, sessionID string, w *QueuedWork) {
	if _, err := s.keepQueued(ctx, sessionID, w); err != nil {
		s.log.Error("keep the prompt that goes on with a turn cut off", "session_id", sessionID, "err", err)
		return
	}
	if s.kept == nil || w.Item == 0 {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), queueWrite)
	defer cancel()
	if err := s.kept.Release(rctx, w.Item); err != nil {
		// Kept by this replica, it is released with the session (HandOver).
		s.log.Warn("release the prompt that goes on with a turn cut off", "session_id", sessionID, "err", err)
	}
}

// CrashNotice is what the page says when a crash (its replica killed, the
// machine lost) cut a turn off and Claude is asked to go on.
const CrashNotice = "The Parley replica running this session stopped while Claude was working. " +
	"Claude is asked to go on with what it had not finished or read."

// CutTurn is a turn a run that crashed had written and not finished, as
// its log shows it once it is reconciled with Claude's transcript.
type CutTurn struct {
	Text   string
	By     Author
	Parley bool // Parley's own prompt (QueuedWork.Parley), not a member's
	// CutCalls names the tools of the turn's allowed calls that were
	// running when the run was lost: their error result is the cut, and
	// the prompt that goes on says so.
	CutCalls []string
}

// cutCallsText tells Claude that allowed calls were cut off: what they
// did is unknown, so it checks before it runs them again.
func cutCallsText(tools []string) string {
	if len(tools) == 0 {
		return ""
	}
	return " The call to " + strings.Join(tools, ", ") + " that was running then was cut off when the Claude process ended " +
		"(the error you see as its result is that cut): it may have run in part or in whole, and its result is unknown. " +
		"Check what it did before you run it again."
}

// GoOnAfterCrash is the prompt that goes on with what a crash cut off:
// turns written and not finished, oldest first; begun says the CLI had
// begun the first; stopped, that it was being stopped or waited for an
// ask (whose answer goes on with it). The CLI forgets a cut turn as after
// a drain (see above). A turn that was itself sent by Parley does not go
// on again: a turn that takes its replica down with it is not run over and
// over. ok is false when there is nothing to go on with.
func GoOnAfterCrash(turns []CutTurn, begun, stopped bool) (w QueuedWork, ok bool) {
	ts := make([]turnAuthor, len(turns))
	for i, t := range turns {
		ts[i] = turnAuthor{Author: t.By, n: i + 1, text: t.Text, parley: t.Parley}
	}
	var running *turnAuthor
	unread := ts
	if begun && len(ts) > 0 {
		unread = ts[1:]
		if !stopped && !ts[0].parley {
			running = &ts[0]
		}
	}
	w, ok = goOn(running, unread)
	if ok && running != nil {
		if cut := cutCallsText(turns[0].CutCalls); cut != "" {
			w.Text = strings.Replace(w.Text, goOnText, goOnText+cut, 1)
		}
	}
	return w, ok
}
