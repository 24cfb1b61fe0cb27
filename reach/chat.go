package reach

import (
	"context"
	"strconv"
	"strings"

	"parley/runner"
	"parley/store"
)

// chat posts the ask to the project's Slack channel and webhook, if it
// has them. A Slack click is answered as the member whose e-mail the
// Slack user has; the webhook gets no token.
func (r *Reacher) chat(ctx context.Context, a Ask, pr store.ProjectReach) {
	if r.ch.Slack != nil && pr.SlackToken != "" && pr.SlackChannel != "" {
		msg := Compose(r.cfg.BaseURL, a, true)
		msg.Token, msg.AnswerURL = "", ""
		d := store.Delivery{InputID: a.InputID, Channel: "slack", Target: pr.SlackChannel, Outcome: "sent"}
		ref, err := r.ch.Slack.Post(ctx, pr, msg)
		if err != nil {
			d.Outcome, d.Detail = "failed", err.Error()
		}
		d.Ref = ref
		r.record(ctx, d)
	}
	if r.ch.Hook != nil && pr.WebhookURL != "" {
		msg := Compose(r.cfg.BaseURL, a, false)
		d := store.Delivery{InputID: a.InputID, Channel: "webhook", Target: "webhook", Outcome: "sent"}
		if err := r.ch.Hook.Post(ctx, pr, msg); err != nil {
			d.Outcome, d.Detail = "failed", err.Error()
		}
		r.record(ctx, d)
	}
}

// closed takes back what reached people for an ask that closed: each
// device that showed it now shows who answered (or that it expired), the
// Slack message says so too.
func (r *Reacher) closed(ctx context.Context, a store.ReachAsk) {
	if ok, err := r.st.ClaimReachStage(ctx, a.ID, stageClosed); err != nil || !ok {
		return
	}
	in, err := r.st.GetInput(ctx, a.ID)
	if err != nil {
		return
	}
	ask, err := r.ask(ctx, a)
	if err != nil {
		return
	}
	// The ask as it was (Slack replaces the whole message), without its
	// buttons, and who answered it.
	msg := Compose(r.cfg.BaseURL, ask, false)
	msg.Type, msg.Actions = TypeAnswered, nil
	var resp runner.Response
	_ = jsonUnmarshal(in.Answer, &resp)
	if a.Status == "answered" || a.Status == "denied" {
		msg.By, msg.Via = nonEmpty(in.AnsweredBy, "someone"), resp.Via
	} else {
		msg.By = "nobody: " + strings.ReplaceAll(a.Status, "_", " ")
	}
	ds, err := r.st.Deliveries(ctx, a.ID)
	if err != nil {
		return
	}
	pr, _ := r.st.ProjectReachOf(ctx, a.ProjectID)
	answered := a.Status == "answered" || a.Status == "denied"
	for _, d := range ds {
		if d.Outcome != "sent" {
			continue
		}
		r.takeBack(ctx, d, pr, msg)
		if !answered {
			// What reached this person came to nothing: the ask closed
			// unanswered (timed out, cancelled).
			r.record(ctx, store.Delivery{InputID: d.InputID, UserID: d.UserID, Channel: d.Channel, Target: d.Target,
				Outcome: "expired", Detail: "closed unanswered (" + strings.ReplaceAll(a.Status, "_", " ") + ")", Ref: d.Ref})
		}
	}
}

// takeBack replaces one delivery's notification with msg.
func (r *Reacher) takeBack(ctx context.Context, d store.Delivery, pr store.ProjectReach, msg Message) {
	switch d.Channel {
	case "push":
		id, err := strconv.ParseInt(d.Ref, 10, 64)
		if err != nil || r.ch.Push == nil || d.UserID == nil {
			return
		}
		dev, err := r.st.PushDeviceOf(ctx, *d.UserID, id)
		if err != nil {
			return
		}
		if err := r.ch.Push.Push(ctx, dev, msg); err != nil {
			r.log.Info("reach: taking a notification back", "input_id", d.InputID, "err", err)
		}
	case "slack":
		if r.ch.Slack != nil && d.Ref != "" {
			if err := r.ch.Slack.Update(ctx, pr, d.Ref, msg); err != nil {
				r.log.Info("reach: updating the Slack message", "input_id", d.InputID, "err", err)
			}
		}
	case "webhook":
		if r.ch.Hook != nil && pr.WebhookURL != "" {
			r.ch.Hook.Post(ctx, pr, msg)
		}
	}
}
