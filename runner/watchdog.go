package runner

import (
	"context"
	"strconv"
	"time"
)

// DefaultStallGrace is how long a stalled turn gets to end after the
// watchdog's interrupt before its process is killed.
const DefaultStallGrace = 10 * time.Second

// The watchdog interrupts a turn that has printed nothing for stallTimeout,
// and kills the process if the interrupt does not end the turn within
// stallGrace. It never runs while an ask is open: a turn waiting for a
// person is not stalled. Like the idle clock it is a deadline, not a poll:
// one timer, re-armed by each line the CLI prints, fires once and the loop
// decides.
//
// tool_progress lines do not re-arm it: the CLI prints them every 30 s
// while a tool blocks, so they would keep a hung command alive forever.

// runLimits is the run's part of the watchdog and the spending limits,
// owned by the loop goroutine like the rest of a Run's state.
type runLimits struct {
	stallTimeout time.Duration // 0 = no watchdog
	stallGrace   time.Duration // 0 = DefaultStallGrace
	stall        *time.Timer
	stallKill    *time.Timer
	stallGen     int  // numbers stall timers, so a stale one is ignored
	stallEpoch   int  // numbers turn ends, so a stale kill is ignored
	stallFired   bool // the watchdog interrupted the current turn
	// outcome is the status the last turn left (completed, interrupted,
	// error); endStatus, when set, is the status Parley's own ending of
	// the process leaves.
	outcome, endStatus string
	budgetCheck        func(context.Context) string
}

// armStall restarts the stall clock when a turn is under way and no ask is
// open, and stops it otherwise.
func (r *Run) armStall() {
	if r.stallTimeout <= 0 {
		return
	}
	if r.stall != nil {
		r.stall.Stop()
	}
	r.stallGen++
	if r.turns == 0 || len(r.pending) > 0 || r.stallFired {
		return
	}
	gen, d := r.stallGen, r.stallTimeout
	if !r.initSeen {
		// Before its first line the CLI is starting (several seconds on a
		// busy machine): a short watchdog would interrupt the start.
		d = max(d, stallStartup)
	}
	r.stall = time.AfterFunc(d, func() { r.post(stallCmd{gen: gen}) })
}

// stallStartup is the least silence the watchdog allows a process that
// has printed nothing yet.
const stallStartup = time.Minute

// turnEnded stops the watchdog's clocks for the turn a result just ended.
func (r *Run) turnEnded() {
	r.stallEpoch++
	r.stallFired = false
	if r.stallKill != nil {
		r.stallKill.Stop()
	}
}

// words says a duration the way a person would: "10 minutes", "45 seconds".
func words(d time.Duration) string {
	switch {
	case d >= time.Minute && d%time.Minute == 0:
		return plural(int(d/time.Minute), "minute")
	case d >= time.Second:
		return plural(int(d.Round(time.Second)/time.Second), "second")
	}
	return d.String()
}

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return strconv.Itoa(n) + " " + unit + "s"
}
