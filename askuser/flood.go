package askuser

import (
	"context"
	"fmt"
	"math"
	"time"

	"parley/limit"
)

// A run's asks are bounded where they enter Parley, whatever path they
// take (the relay, the MCP endpoint, a `parley mcp-askuser` child): each
// becomes an ask in the members' inbox and up to 256 KiB in the database,
// and a run's Bash can post as many as it likes with its token.
const (
	// MaxOpenAsks is how many asks one run may have waiting at once.
	MaxOpenAsks = 10
	// AsksPer and AsksPeriod are the rate of unanswered asks per run: a
	// burst of AsksPer, then one more every AsksPeriod/AsksPer. An ask a
	// person answers or declines gives its share back, so a conversation
	// of quick answers is never slowed; asks left for the inbox (the
	// caller gone, timed out) are what a flood leaves and what is bounded.
	AsksPer    = 10
	AsksPeriod = 10 * time.Minute
)

// askLimits holds the per-run-token bounds on asks.
type askLimits struct {
	open *limit.Conns
	rate *limit.Rate
}

func newAskLimits() askLimits {
	return askLimits{open: limit.NewConns(MaxOpenAsks), rate: limit.NewRateOver(AsksPer, AsksPeriod)}
}

// limitedAsker is a run's Asker behind its token's bounds.
type limitedAsker struct {
	asker Asker
	token string
	lim   askLimits
}

// Ask refuses a form beyond the run's open asks or its rate, with a
// sentence the model reads as the tool's error; else it asks.
func (l limitedAsker) Ask(ctx context.Context, f Form) (Answer, error) {
	release, ok := l.lim.open.Acquire(l.token)
	if !ok {
		return Answer{}, fmt.Errorf("too many open questions (%d); wait for the answers before asking more", MaxOpenAsks)
	}
	defer release()
	if ok, wait := l.lim.rate.Allow(l.token); !ok {
		return Answer{}, fmt.Errorf("too many questions in a short time; wait for the answers, and ask again in %d s at the earliest",
			int(math.Ceil(wait.Seconds())))
	}
	a, err := l.asker.Ask(ctx, f)
	if err == nil && (a.Status == StatusAnswered || a.Status == StatusDeclined) {
		l.lim.rate.Refund(l.token)
	}
	return a, err
}
