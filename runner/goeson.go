package runner

// parleyGoesOn reports whether Parley carries the session on by itself
// after this run ends, with no message from anyone: a drain kept the turn
// it cut to go on (drainCmd), the run owes answers that a new run delivers
// (resumeToDeliver, or DeliverOwed at the next start), or a fresh
// conversation replaces one the CLI could not resume (startFresh). The
// run-end notice then says so, not "the next message resumes the session".
func (r *Run) parleyGoesOn() bool {
	return r.goesOn || r.OwesAnswers() || (r.resumeFailed && len(r.unconfirmed) > 0)
}
