package server

import (
	"context"
	"strings"

	"parley/hub"
	"parley/metrics"
	"parley/runner"
	"parley/runstore"
	"parley/store"
	"parley/streamjson"
)

// Publisher is the runner.Publisher that renders each event once and hands
// the frame to the hub. The publishers made from one (Metered) share which
// message streams in each session, for their fragments (render_stream.go).
type Publisher struct {
	hub     *hub.Hub
	streams *streamTracker
	metrics *metrics.Metrics
	hooks   *pubHooks // shared by the publishers made from one
}

// pubHooks are told of events beside the hub.
type pubHooks struct {
	onAsk func() // an ask opened, closed or detached (reach)
}

// askEvent tells the hook of an ask event.
func (p *Publisher) askEvent() {
	if p.hooks != nil && p.hooks.onAsk != nil {
		p.hooks.onAsk()
	}
}

// NewPublisher returns a Publisher for h that counts nothing.
func NewPublisher(h *hub.Hub) *Publisher {
	return &Publisher{hub: h, streams: newStreamTracker(), hooks: &pubHooks{}}
}

// Metered returns a Publisher that shares p's stream state and also counts
// each event in m.
func (p *Publisher) Metered(m *metrics.Metrics) *Publisher {
	return &Publisher{hub: p.hub, streams: p.streams, metrics: m, hooks: p.hooks}
}

// Publish implements runner.Publisher.
func (p *Publisher) Publish(e runner.Event) {
	r := p.streams.renderer(e.SessionID, e.Seq)
	f := r.frame(context.Background(), []store.Event{runstore.StoreEvent(e)})
	p.streams.keep(e.SessionID, r, e.Seq, e.Type)
	f.Delta, f.IsDelta = deltaText(e.Type, e.Payload)
	f.Msg, f.Unbound = r.st.open, r.unbound
	f.IsDelta = f.IsDelta && !f.Unbound
	f.Born, f.Kind = e.CreatedAt, e.Type
	p.metrics.Event(e.SessionID, e.Type, e.Payload, e.CreatedAt)
	p.hub.Publish(e.SessionID, f)
	switch e.Type {
	case runner.TypeInputRequested, runner.TypeInputResolved, runner.TypeInputDetached:
		p.askEvent()
		if e.ProjectID != 0 {
			// A poke, not a fragment: each inbox re-reads what its viewer may see.
			p.hub.Publish(hub.ProjectTopic(e.ProjectID), hub.Frame{})
		}
	}
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
func (p *Publisher) PublishBatch(evs []runner.Event) {
	var co hub.Coalescer
	r := p.streams.renderer(evs[0].SessionID, evs[0].Seq)
	onlyDeltas := true
	var text strings.Builder
	for _, e := range evs {
		f := r.frame(context.Background(), []store.Event{runstore.StoreEvent(e)})
		f.Delta, f.IsDelta = deltaText(e.Type, e.Payload)
		f.Msg, f.Unbound = r.st.open, r.unbound
		f.IsDelta = f.IsDelta && !f.Unbound
		f.Born, f.Kind = e.CreatedAt, e.Type
		p.metrics.Event(e.SessionID, e.Type, e.Payload, e.CreatedAt)
		co.Add(f)
		if f.IsDelta {
			text.WriteString(f.Delta)
		} else {
			onlyDeltas = false
		}
	}
	last := evs[len(evs)-1]
	p.streams.keep(last.SessionID, r, last.Seq, last.Type)
	f := hub.Frame{First: evs[0].Seq, Seq: last.Seq, Data: co.Take(), Born: evs[0].CreatedAt, Kind: "batch", Msg: r.st.open, Unbound: r.unbound}
	if onlyDeltas && !r.unbound {
		f.IsDelta, f.Delta = true, text.String()
	}
	p.hub.Publish(evs[0].SessionID, f)
	for _, e := range evs {
		switch e.Type {
		case runner.TypeInputRequested, runner.TypeInputResolved, runner.TypeInputDetached:
			p.askEvent()
			if e.ProjectID != 0 {
				p.hub.Publish(hub.ProjectTopic(e.ProjectID), hub.Frame{})
			}
		}
	}
}
