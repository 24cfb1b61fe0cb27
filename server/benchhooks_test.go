package server

import (
	"maps"
	"sync"
	"time"

	"parley/runner"
)

// What the test harness (harness_test.go) holds for the benchmarks, which
// are built only with -tags bench: the viewer farm's argument and the
// publisher that stamps when each event is published.

// farmArg starts the test binary as BenchmarkFanout's viewer farm
// (viewerfarm_test.go; without the bench tag, nobench_test.go says so).
const farmArg = "viewer-farm"

// publishStamps is the runs' publisher noting when each event is
// published, its batch written and committed: where the fan-out starts.
// The benchmark streams one session, so seqs are its own.
type publishStamps struct {
	pub runner.Publisher
	mu  sync.Mutex
	at  map[int64]time.Time
}

func (p *publishStamps) Publish(e runner.Event) {
	p.stamp([]runner.Event{e})
	p.pub.Publish(e)
}

func (p *publishStamps) PublishBatch(evs []runner.Event) {
	p.stamp(evs)
	p.pub.(runner.BatchPublisher).PublishBatch(evs)
}

func (p *publishStamps) stamp(evs []runner.Event) {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range evs {
		p.at[e.Seq] = now
	}
}

// stamps returns a copy of the stamps.
func (p *publishStamps) stamps() map[int64]time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.at)
}
