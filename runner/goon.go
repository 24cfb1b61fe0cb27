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
// messages it had not read yet. It is kept in line (keepGoOn), so the next
// replica to lease the session sends it, this one too when it starts
// again; nothing the team sent is lost to a restart.

// cutNotice is what the page says when a drain cuts a turn off.
const cutNotice = "Parley is restarting, and Claude's turn did not end in time: Parley stopped it. " +
	"Claude is asked to go on where it left off as soon as the session runs again."

// goOnText opens the prompt that has Claude go on with a turn a drain cut off.
const goOnText = "(Sent by Parley.) Parley restarted while you were working, and stopped you. " +
	"Go on where you left off."

// unreadText introduces the turns the CLI had queued and never read.
const unreadText = "(Sent by Parley.) Parley restarted, and these messages sent to you meanwhile never reached you:"

// goOn is the prompt for a session whose process a drain ended with turns
// unfinished (a): when a turn was running, it has Claude go on with it, on
// behalf of its author; a turn that waited for asks goes on with their
// answers instead. Either way it carries the turns queued behind, with
// their authors. ok is false when there is nothing to go on with.
func goOn(a drainReply) (w QueuedWork, ok bool) {
	if len(a.turns) == 0 {
		return QueuedWork{}, false
	}
	var b strings.Builder
	by, unread := a.turns[0].Author, a.turns[1:]
	working := a.activity == activityWorking && !a.stopped
	switch {
	case working:
		b.WriteString(goOnText)
	case len(unread) > 0:
		by = unread[0].Author
		b.WriteString(unreadText)
	default:
		return QueuedWork{}, false
	}
	if working && len(unread) > 0 {
		b.WriteString(" These messages sent to you meanwhile never reached you:")
	}
	for _, t := range unread {
		b.WriteString("\n\n")
		if t.Name != "" {
			b.WriteString("From " + t.Name + ":\n")
		}
		b.WriteString(t.text)
	}
	return QueuedWork{Text: b.String(), By: by.Name, ByID: by.ID}, true
}

// keepGoOn keeps w in line for the session (see above); a drain hands the
// line over with the session. If it cannot be kept, w stays in memory
// (Line 0): the drain gives it to another replica, if one is alive.
func (s *Supervisor) keepGoOn(ctx context.Context, sessionID string, w *QueuedWork) {
	if _, err := s.keepInLine(ctx, sessionID, w); err != nil {
		s.log.Error("keep the prompt that goes on with a turn cut off", "session_id", sessionID, "err", err)
	}
}
