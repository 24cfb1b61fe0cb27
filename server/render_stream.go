package server

import (
	"context"
	"sync"

	"github.com/a-h/templ"

	"parley/runner"
	"parley/store"
	"parley/streamjson"
	"parley/views"
)

// What the cut mark under a reply says: its run or its turn ended while
// it streamed.
const (
	cutByRunEnd  = "Cut off here: Claude's process ended before this reply was finished."
	cutByTurnEnd = "Cut off here: the turn ended before this reply was finished."
	cutByRestart = "Cut off here: this reply broke off, and Claude Code asked the model again."
)

// streamState is what a renderer knows of the top-level message streaming
// in a session: every fragment for it names its block by id.
type streamState struct {
	open    string // the message streaming now; "" for none
	hasText bool   // text streamed into its block
	done    bool   // an assistant event completed its text (the block was replaced)
	known   bool   // seen from the stream's start, or read from the log
}

func fromOpenStream(o store.OpenStream) streamState {
	return streamState{open: o.MessageID, hasText: o.HasText, done: o.Done, known: true}
}

// stream handles --include-partial-messages events: a message_start opens a
// live block, text deltas append to it by its id, and a message that
// stopped without text (it only called tools) takes its empty block away.
// Subagent streams are not shown.
func (r *renderer) stream(seq int64, payload []byte) []templ.Component {
	e, ok := streamjson.DecodeStreamEvent(payload)
	if !ok {
		return nil
	}
	switch {
	case e.Type == "message_start":
		// One that still streams was cut off (an API error mid-stream,
		// and Claude Code asked again).
		var out []templ.Component
		if r.st.known && r.st.open != "" && r.st.open != e.MessageID {
			out = r.cut(seq, cutByRestart)
		}
		r.st = streamState{open: e.MessageID, known: true}
		return append(out, r.messageStart(e.MessageID)...)
	case e.IsTextDelta():
		if !r.know(seq) || r.st.open == "" {
			return nil
		}
		r.st.hasText = true
		if r.skipping {
			return nil
		}
		return []templ.Component{views.TextDelta(r.st.open, e.Text)}
	case e.Type == "message_stop":
		if !r.know(seq) {
			return nil
		}
		st := r.st
		r.st = streamState{known: true}
		if st.open != "" && !st.hasText && !st.done {
			return []templ.Component{views.StreamDropped(st.open)}
		}
	}
	return nil
}

// messageStart opens the block of a message that starts streaming. A
// backlog shows a message that completes in it whole (or, paged, holds its
// place with a block that is not live) instead of replaying its stream.
func (r *renderer) messageStart(id string) []templ.Component {
	text, done := r.completed[id]
	r.skipping = r.backlog && done
	if !r.skipping {
		return []templ.Component{appendTo(views.AssistantLive(id))}
	}
	r.skipped[id] = true
	if r.paged {
		return []templ.Component{appendTo(views.AssistantSlot(id))}
	}
	if text == "" {
		return nil
	}
	return []templ.Component{appendTo(views.AssistantText(id, text, false))}
}

// know makes sure the renderer knows which message streams before the
// event seq, reading it from the log if it must; false leaves the event's
// fragment out and marks the render unbound.
func (r *renderer) know(seq int64) bool {
	if r.st.known {
		return true
	}
	if r.resolve != nil {
		if st, ok := r.resolve(seq - 1); ok {
			r.st = st
			return true
		}
	}
	if r.tracker != nil {
		if st, ok := r.tracker.read(r.session, seq-1); ok {
			r.st = st
			return true
		}
	}
	r.unbound = true
	return false
}

// cut closes the block of a message still streaming when its turn or its
// run ends: the streamed text stays, under a cut mark. A block that
// never got text is taken away.
func (r *renderer) cut(seq int64, text string) []templ.Component {
	if !r.know(seq) {
		return nil
	}
	st := r.st
	r.st = streamState{known: true}
	switch {
	case st.open == "" || st.done:
		return nil
	case !st.hasText:
		return []templ.Component{views.StreamDropped(st.open)}
	}
	return []templ.Component{views.CutMark(st.open, text)}
}

// streamTracker keeps, for the publisher, which message streams in each
// session as of the last event published for it, so a live delta names
// its message although the CLI's delta lines do not carry its id. Where
// it did not see the stream start (events another replica wrote, read
// from a session's middle, or a gap in what was published) it reads the
// log (resolve); failing that the frame is unbound and sockets read its
// events from the log.
type streamTracker struct {
	mu       sync.Mutex
	sessions map[string]trackedStream
	resolve  func(ctx context.Context, sessionID string, at int64) (store.OpenStream, error)
}

type trackedStream struct {
	st   streamState
	last int64 // the seq of the last event published
}

func newStreamTracker() *streamTracker {
	return &streamTracker{sessions: map[string]trackedStream{}}
}

// setResolve sets how the tracker reads the log (Server does, at New).
func (t *streamTracker) setResolve(f func(ctx context.Context, sessionID string, at int64) (store.OpenStream, error)) {
	t.mu.Lock()
	t.resolve = f
	t.mu.Unlock()
}

// renderer returns a live renderer for the session's events from seq first.
func (t *streamTracker) renderer(sessionID string, first int64) *renderer {
	r := &renderer{}
	if t == nil {
		return r
	}
	r.tracker, r.session = t, sessionID
	t.mu.Lock()
	ts, ok := t.sessions[sessionID]
	t.mu.Unlock()
	if ok && ts.last == first-1 {
		r.st = ts.st
	}
	return r
}

// read reads the stream open at seq at of the session's log.
func (t *streamTracker) read(sessionID string, at int64) (streamState, bool) {
	t.mu.Lock()
	resolve := t.resolve
	t.mu.Unlock()
	if resolve == nil {
		return streamState{}, false
	}
	o, err := resolve(context.Background(), sessionID, at)
	return fromOpenStream(o), err == nil
}

// keep notes what r knows after the session's events up to seq last. A
// session whose run ended is forgotten: its next run starts afresh.
func (t *streamTracker) keep(sessionID string, r *renderer, last int64, lastType string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !r.st.known || lastType == runner.TypeRunEnded {
		delete(t.sessions, sessionID)
		return
	}
	t.sessions[sessionID] = trackedStream{st: r.st, last: last}
}
