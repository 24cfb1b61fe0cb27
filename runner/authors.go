package runner

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Author is who sent a turn: the name the page shows and the member's user
// id (0 = nobody's in particular: an older queued turn, a test).
type Author struct {
	Name string
	ID   int64
}

// ErrNotAllowed refuses a turn whose author may no longer send turns in
// the session's project (removed, or made a viewer, since sending it).
var ErrNotAllowed = errors.New("the sender may no longer send messages in this project")

// authors tracks whose turns a run's process has, so that a member who
// loses the right to prompt (removed from the project, made a viewer) has
// no turn of theirs run on: the running one is interrupted at once, and
// one the CLI queued behind it as soon as it starts. Owned by the loop.
type authors struct {
	// mayPrompt says whether the user may send turns in the project now;
	// nil = anyone may (Options.MayPrompt).
	mayPrompt func(ctx context.Context, userID int64) (bool, error)
	inFlight  []turnAuthor     // turns written and not yet ended, oldest first
	barred    map[int64]string // users found unable to prompt → their name
	next      int              // numbers turns written
	stopped   int              // the number of the turn last interrupted for its author
	// interrupted is the number of the turn an interrupt was last sent
	// for (by anyone): a drain does not have Claude go on with it (goOn).
	interrupted int
	// begun is the number of the turn the CLI began last (its system/init).
	begun int
	// stopDue defers a check's stop until the output already read is
	// handled: the running turn's result may be in it, and the interrupt
	// would then stop the next turn, someone else's.
	stopDue bool
	// unsure says a check could not be made (the database away): the
	// check is made again after checkRetry.
	unsure bool
	// ran are the authors of every turn this process was given: what
	// their turns started may still run in it (a daemon from Bash).
	ran map[int64]Author
}

// checkRetry is how long a check that could not be made waits to be made again.
var checkRetry = 5 * time.Second

type turnAuthor struct {
	Author
	n      int
	text   string // what it says, for a drain that cuts it off (goOn)
	parley bool   // Parley's own (QueuedWork.Parley)
}

// mayPromptWait bounds one check, which runs on the loop.
const mayPromptWait = 5 * time.Second

// allowed says whether by may send a turn now, and notes the answer. A
// database that cannot answer in time does not hold the turn up: its
// sender was allowed when they sent it.
func (r *Run) allowed(ctx context.Context, by Author) bool {
	if r.mayPrompt == nil || by.ID == 0 {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, mayPromptWait)
	defer cancel()
	ok, err := r.mayPrompt(ctx, by.ID)
	if err != nil {
		r.log.Warn("check that the sender may still prompt", "user_id", by.ID, "err", err)
		r.unsure = true
		return true
	}
	if ok {
		delete(r.barred, by.ID) // added back since
		return true
	}
	if r.barred == nil {
		r.barred = map[int64]string{}
	}
	r.barred[by.ID] = by.Name
	return false
}

// mustCheck says whether a turn by by is checked before it is written:
// one that waited (in the queue for a slot, kept), or by someone found barred.
// Others come straight from a page or a client that checked just now.
func (r *Run) mustCheck(by Author, waited bool) bool {
	_, barred := r.barred[by.ID]
	return by.ID != 0 && (waited || barred)
}

// turnWritten notes a turn just written to stdin, and its author.
func (r *Run) turnWritten(t sentTurn) {
	if t.by.ID != 0 {
		if r.ran == nil {
			r.ran = map[int64]Author{}
		}
		r.ran[t.by.ID] = t.by
	}
	r.next++
	r.inFlight = append(r.inFlight, turnAuthor{Author: t.by, n: r.next, text: t.text, parley: t.parley})
}

// interrupting notes that the running turn is being interrupted.
func (r *Run) interrupting() {
	if len(r.inFlight) > 0 {
		r.interrupted = r.inFlight[0].n
	}
}

// turnBegun notes that the CLI began the oldest turn (system/init).
func (r *Run) turnBegun() {
	if len(r.inFlight) > 0 {
		r.begun = r.inFlight[0].n
	}
}

// turnFinished notes that the oldest turn ended; the next one, should its
// author have been barred meanwhile, is stopped as it starts.
func (r *Run) turnFinished(ctx context.Context) {
	if len(r.inFlight) > 0 {
		r.inFlight = r.inFlight[1:]
	}
	// Turns the CLI folded into the one that ended are over too.
	if n := len(r.inFlight); n > r.turns {
		r.inFlight = r.inFlight[n-r.turns:]
	}
	r.stopBarredTurn(ctx)
}

// stopBarredTurn interrupts the running turn if its author is barred.
func (r *Run) stopBarredTurn(ctx context.Context) {
	if len(r.inFlight) == 0 || r.stopping {
		return
	}
	cur := r.inFlight[0]
	if _, barred := r.barred[cur.ID]; !barred || cur.ID == 0 || r.stopped == cur.n {
		return
	}
	r.stopped = cur.n
	r.notice(ctx, "warn", fmt.Sprintf("Parley stopped %s's turn: %s may no longer send messages in this project.",
		cur.Name, cur.Name))
	if err := r.interrupt(ctx, "Parley"); err != nil {
		r.log.Error("interrupt the turn of a member who lost access", "user_id", cur.ID, "err", err)
	}
}

// barredRan names a member who lost access and whose turn this process
// was given; "" if none.
func (r *Run) barredRan() string {
	for id := range r.ran {
		if name, barred := r.barred[id]; barred {
			return name
		}
	}
	return ""
}

// endIfDue ends the process once it has no turn left if a member who
// lost access had a turn in it: what their turns started (a
// daemon, a command still running) dies with the run's cgroup. The turn
// of someone else that runs meanwhile is let finish; the session's next
// message resumes the conversation in a new process.
func (r *Run) endIfDue(ctx context.Context) {
	if r.stopping || r.turns > 0 || r.attachedAsks() > 0 {
		return
	}
	name := r.barredRan()
	if name == "" {
		return
	}
	r.stopping = true
	r.notice(ctx, "info", fmt.Sprintf("Parley ended this session's process and everything it started: %s, who sent messages in it, may no longer send messages in this project.", name))
	r.log.Info("ending a process that ran turns of a member who lost access")
	r.cancel()
}

// stopIfDue does a stop a check deferred (stopDue), once the output read
// by then is handled; it runs on the loop.
func (r *Run) stopIfDue(ctx context.Context) {
	if r.stopDue {
		r.stopDue = false
		r.stopBarredTurn(ctx)
		r.endIfDue(ctx)
	}
}

// CheckAuthors has every live run check that the authors of its turns may
// still send them, and stop the running turn of one who may not. Called
// when project membership changes; it returns at once.
func (s *Supervisor) CheckAuthors() {
	for _, r := range s.liveRuns() {
		if r.mayPrompt != nil {
			go r.post(checkAuthorsCmd{}) // returns once the run has it, or has ended
		}
	}
}
