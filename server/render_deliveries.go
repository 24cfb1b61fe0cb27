package server

import (
	"bytes"
	"context"
	"strings"
	"time"

	"parley/hub"
	"parley/store"
	"parley/views"
)

// The deliveries of an ask (issue 30) are shown on its card: "sent to
// Ann's phone 12:03 · e-mailed bob@example.com 12:05 · not sent: Ann was
// looking". They are read from Postgres once per page render, for every
// ask the render shows; a card streamed live shows none until the page
// is loaded again.

// deliveriesOf returns the lines of each ask of inputIDs that has
// deliveries; nil when reach is off or they could not be read (the
// cards then show none: a card without its deliveries beats no page).
func (s *Server) deliveriesOf(ctx context.Context, inputIDs []string) map[string][]views.ReachLine {
	if s.reach == nil || len(inputIDs) == 0 {
		return nil
	}
	ds, err := s.st.Deliveries(ctx, inputIDs...)
	if err != nil {
		s.log.Debug("deliveries", "err", err)
		return nil
	}
	s.nameEmailed(ctx, ds)
	out := map[string][]views.ReachLine{}
	for _, d := range ds {
		out[d.InputID] = append(out[d.InputID], reachLine(d))
	}
	return out
}

// nameEmailed puts the name of the person in place of the address of
// each e-mail delivery: every member and viewer reads the card, and a
// person's address is for the project's owners only (its settings page).
func (s *Server) nameEmailed(ctx context.Context, ds []store.Delivery) {
	var ids []int64
	for _, d := range ds {
		if d.Channel == "email" && d.UserID != nil {
			ids = append(ids, *d.UserID)
		}
	}
	names := map[int64]string{}
	if len(ids) > 0 {
		var err error
		if names, err = s.st.UserNames(ctx, ids); err != nil {
			s.log.Debug("deliveries", "err", err)
		}
	}
	for i, d := range ds {
		if d.Channel != "email" {
			continue
		}
		ds[i].Target = "a member"
		if d.UserID != nil && names[*d.UserID] != "" {
			ds[i].Target = names[*d.UserID]
		}
	}
}

// withDeliveries adds to a backlog frame the deliveries of the asks its
// events open.
func (s *Server) withDeliveries(ctx context.Context, f hub.Frame, evs []store.Event) hub.Frame {
	var ids []string
	for _, e := range evs {
		if e.Type == "input_requested" {
			ids = append(ids, askView(e.SessionID, e.Payload, false).ID)
		}
	}
	lines := s.deliveriesOf(ctx, ids)
	if len(lines) == 0 {
		return f
	}
	buf := bytes.NewBuffer(f.Data)
	for _, id := range ids {
		if l := lines[id]; len(l) > 0 {
			_ = views.AskReachOOB(id, l).Render(ctx, buf)
		}
	}
	f.Data = buf.Bytes()
	return f
}

// reachLine says one delivery in a few words. A failure's detail (an
// endpoint, a server's answer) stays in the log of deliveries, off the
// page every member of the project reads.
func reachLine(d store.Delivery) views.ReachLine {
	l := views.ReachLine{At: d.At.UTC().Format(time.RFC3339), Clock: d.At.UTC().Format("15:04"), Outcome: d.Outcome}
	l.Text = deliveryText(d)
	return l
}

func deliveryText(d store.Delivery) string {
	switch d.Outcome {
	case "sent":
		switch d.Channel {
		case "email":
			return "e-mailed " + d.Target
		case "slack":
			return "posted to " + d.Target + " on Slack"
		case "webhook":
			return "sent to the webhook"
		}
		return "sent to " + d.Target
	case "suppressed":
		verb := " was looking"
		if strings.Contains(d.Target, ", ") {
			verb = " were looking"
		}
		return "not sent: " + d.Target + verb
	case "no_device":
		return "not pushed: " + d.Target + " has no device with notifications on"
	case "quiet":
		return "not pushed: " + d.Target + "'s " + d.Detail
	case "failed":
		switch d.Channel {
		case "email":
			return "could not e-mail " + d.Target
		case "slack":
			return "could not post to " + d.Target + " on Slack"
		case "webhook":
			return "the webhook failed"
		}
		return "could not reach " + d.Target
	case "expired":
		return "expired before reaching " + d.Target
	}
	return d.Channel + " to " + d.Target + ": " + d.Outcome
}

// addDeliveries puts on the inbox's open cards their deliveries, read in
// one query for the whole list.
func (s *Server) addDeliveries(ctx context.Context, items []views.InboxItem) {
	ids := make([]string, 0, len(items))
	for _, it := range items {
		ids = append(ids, it.ID)
	}
	lines := s.deliveriesOf(ctx, ids)
	for i := range items {
		items[i].Reach = lines[items[i].ID]
	}
}

// from names where an answer came from when it was not a page: " from
// Ann's phone", " from Slack".
func from(via string) string {
	if via == "" {
		return ""
	}
	return " from " + via
}
