package server

import (
	"bytes"
	"context"
	"strings"

	"parley/runner"
	"parley/store"
	"parley/streamjson"
	"parley/views"
)

// maxCoalesce bounds how many waiting frames one WebSocket message carries.
const maxCoalesce = 512

// coalescer gathers the frames waiting for one socket into one message,
// and runs of streamed text deltas into one delta: a page that fell behind
// applies one swap for a burst, not one per token.
type coalescer struct {
	buf       bytes.Buffer
	delta     strings.Builder
	deltaMsg  string // the message the gathered delta belongs to
	deltaSeq  int64
	hasFrames bool
}

func (c *coalescer) add(f Frame) {
	c.hasFrames = true
	if f.IsDelta {
		if f.Msg != c.deltaMsg {
			c.flushDelta()
		}
		c.delta.WriteString(f.Delta)
		c.deltaMsg, c.deltaSeq = f.Msg, f.Seq
		return
	}
	c.flushDelta()
	c.buf.Write(f.Data)
}

// flushDelta renders the gathered delta text as one fragment, in the shape
// the page's fast path recognises (static/app.js).
func (c *coalescer) flushDelta() {
	if c.delta.Len() == 0 {
		return
	}
	ctx := context.Background()
	_ = views.TextDelta(c.deltaMsg, c.delta.String()).Render(ctx, &c.buf)
	_ = views.LastSeq(c.deltaSeq).Render(ctx, &c.buf)
	c.delta.Reset()
}

// take returns the message and empties the coalescer; nil when empty.
func (c *coalescer) take() []byte {
	c.flushDelta()
	if !c.hasFrames {
		return nil
	}
	b := bytes.Clone(c.buf.Bytes())
	c.buf.Reset()
	c.hasFrames = false
	return b
}

// deltaText returns the text of a top-level streamed text delta event.
func deltaText(typ string, payload []byte) (string, bool) {
	if typ != "stream_event" {
		return "", false
	}
	e, ok := streamjson.DecodeStreamEvent(payload)
	if !ok || !e.IsTextDelta() {
		return "", false
	}
	return e.Text, true
}

// PublishBatch implements runner.BatchPublisher: a run loop's written batch
// becomes one frame (its deltas one delta), so a burst of thousands of
// lines costs each browser one queued frame, not thousands.
func (p publisher) PublishBatch(evs []runner.Event) {
	var co coalescer
	r := p.hub.streams.renderer(evs[0].SessionID, evs[0].Seq)
	onlyDeltas := true
	var text strings.Builder
	for _, e := range evs {
		f := r.frame(context.Background(), []store.Event{toStoreEvent(e)})
		f.Delta, f.IsDelta = deltaText(e.Type, e.Payload)
		f.Msg, f.unbound = r.st.open, r.unbound
		f.IsDelta = f.IsDelta && !f.unbound
		f.Born, f.Kind = e.CreatedAt, e.Type
		p.metrics.Event(e.SessionID, e.Type, e.Payload, e.CreatedAt)
		co.add(f)
		if f.IsDelta {
			text.WriteString(f.Delta)
		} else {
			onlyDeltas = false
		}
	}
	last := evs[len(evs)-1]
	p.hub.streams.keep(last.SessionID, r, last.Seq, last.Type)
	f := Frame{First: evs[0].Seq, Seq: last.Seq, Data: co.take(), Born: evs[0].CreatedAt, Kind: "batch", Msg: r.st.open, unbound: r.unbound}
	if onlyDeltas && !r.unbound {
		f.IsDelta, f.Delta = true, text.String()
	}
	p.hub.Publish(evs[0].SessionID, f)
	for _, e := range evs {
		switch e.Type {
		case runner.TypeInputRequested, runner.TypeInputResolved, runner.TypeInputDetached:
			if e.ProjectID != 0 {
				p.hub.Publish(projectTopic(e.ProjectID), Frame{})
			}
		}
	}
}
