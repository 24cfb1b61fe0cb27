package runner

// The window of a start: from the moment a start may begin its work (it
// holds the session's StartGuard, or needs none) until its run is live in
// the supervisor's map, or the start failed. Its process is spawned,
// resumed, primed (prime.go) and recorded open in that window.

// StartPoint names a moment in the window of a start (SetStartHook).
type StartPoint string

// The moments a start hook hears of.
const (
	// StartSpawned: a cold start's process was started; nothing primed or
	// recorded yet.
	StartSpawned StartPoint = "spawned"
	// StartReady: the process is ready (primed, when it is primed; a warm
	// process taken), and the run is not recorded yet.
	StartReady StartPoint = "ready"
	// StartRecorded: the run is recorded open and not yet live.
	StartRecorded StartPoint = "recorded"
	// StartStopNoted: a Stop, StopProject or Fence marked the start (heard
	// in the stopper's goroutine, before it waits for the start).
	StartStopNoted StartPoint = "stop-noted"
)

// SetStartHook has h told of each StartPoint a start reaches, in the
// start's goroutine, which waits for h: tests hold a start there to land a
// stop or a lease loss in its window. Set it before starts begin; nil = none.
func (s *Supervisor) SetStartHook(h func(sessionID string, at StartPoint)) { s.startHook = h }

// startPoint tells the start hook, if any, that the session's start is at.
func (s *Supervisor) startPoint(sessionID string, at StartPoint) {
	if s.startHook != nil {
		s.startHook(sessionID, at)
	}
}
