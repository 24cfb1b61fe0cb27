package reach

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"parley/act"
	"parley/runner"
	"parley/store"
)

// Answerer answers asks for people who are not on a page: a push
// notification's action, an e-mail's confirm page, a Slack button. Every
// answer goes through act.Service, the page's exactly-once path with its
// role check.
type Answerer struct {
	st   *store.Store
	acts act.Service
}

// NewAnswerer returns an Answerer.
func NewAnswerer(st *store.Store, acts act.Service) *Answerer { return &Answerer{st: st, acts: acts} }

// Outcome is what happened to an answer, for the person: an HTTP status
// and a sentence.
type Outcome struct {
	Status int
	Text   string
}

var (
	outExpired = Outcome{http.StatusForbidden, "This link has expired or was already used. Open the ask in Parley to answer it."}
)

// WithToken answers the ask of token with action, once. The token is
// checked before it is spent, so a wrong action leaves it usable.
func (a *Answerer) WithToken(ctx context.Context, token, action string) Outcome {
	t, err := a.st.PeekAnswerToken(ctx, HashToken(token))
	if err != nil {
		return outExpired
	}
	in, p, err := a.input(ctx, t.InputID)
	if err != nil {
		return Outcome{http.StatusNotFound, "This ask no longer exists."}
	}
	resp, err := Response(p, action)
	if err != nil {
		return Outcome{http.StatusBadRequest, "That answer does not fit this ask: open it in Parley to answer."}
	}
	if in.Status != "pending" {
		return closedOutcome(in)
	}
	if _, err := a.st.UseAnswerToken(ctx, HashToken(token)); err != nil {
		return outExpired
	}
	resp.Via = t.Via
	return a.as(ctx, t.UserID, in, resp)
}

// As answers the ask inputID as the user uid with resp (a Slack click).
func (a *Answerer) As(ctx context.Context, uid int64, inputID, action, via string) Outcome {
	in, p, err := a.input(ctx, inputID)
	if err != nil {
		return Outcome{http.StatusNotFound, "This ask no longer exists."}
	}
	resp, err := Response(p, action)
	if err != nil {
		return Outcome{http.StatusBadRequest, "That answer does not fit this ask: open it in Parley to answer."}
	}
	resp.Via = via
	return a.as(ctx, uid, in, resp)
}

// as answers in as the user uid through the act service.
func (a *Answerer) as(ctx context.Context, uid int64, in store.Input, resp runner.Response) Outcome {
	u, err := a.st.UserByID(ctx, uid)
	if err != nil {
		return Outcome{http.StatusForbidden, "Your Parley account no longer exists."}
	}
	actor := act.Actor{ID: u.ID, Name: u.DisplayName(), Admin: u.IsAdmin}
	err = a.acts.Answer(ctx, actor, in.SessionID, in.ID, resp)
	if err == nil {
		return Outcome{http.StatusOK, "Answered."}
	}
	if now, gerr := a.st.GetInput(ctx, in.ID); gerr == nil && now.Status != "pending" {
		return closedOutcome(now)
	}
	var ref act.Refusal
	switch {
	case errors.Is(err, act.ErrNotFound):
		return Outcome{http.StatusForbidden, "You may not answer asks of this project any more."}
	case errors.As(err, &ref):
		return Outcome{http.StatusConflict, ref.Refusal()}
	}
	return Outcome{http.StatusServiceUnavailable, "Parley could not deliver the answer; try again from the page."}
}

// closedOutcome says an ask was answered or closed before this answer.
func closedOutcome(in store.Input) Outcome {
	if in.Status == "answered" || in.Status == "denied" {
		return Outcome{http.StatusConflict, "Already answered by " + nonEmpty(in.AnsweredBy, "someone") + "."}
	}
	return Outcome{http.StatusConflict, "This ask is closed."}
}

// input loads an ask and its payload.
func (a *Answerer) input(ctx context.Context, id string) (store.Input, runner.AskPayload, error) {
	var p runner.AskPayload
	in, err := a.st.GetInput(ctx, id)
	if err != nil {
		return in, p, err
	}
	if err := json.Unmarshal(in.Payload, &p); err != nil {
		return in, p, err
	}
	p.Kind = in.Kind
	return in, p, nil
}

// Preview is what an e-mail's confirm page shows.
type Preview struct{ Ask, Choice string }

// Preview reads what the token and action would answer, spending
// nothing; its error is a sentence for the person.
func (a *Answerer) Preview(ctx context.Context, token, action string) (Preview, error) {
	t, err := a.st.PeekAnswerToken(ctx, HashToken(token))
	if err != nil {
		return Preview{}, errors.New(outExpired.Text)
	}
	in, p, err := a.input(ctx, t.InputID)
	if err != nil {
		return Preview{}, errors.New("This ask no longer exists.")
	}
	if in.Status != "pending" {
		return Preview{}, errors.New(closedOutcome(in).Text)
	}
	choice, err := ActionTitle(p, action)
	if err != nil {
		return Preview{}, errors.New("That answer does not fit this ask: open it in Parley to answer.")
	}
	return Preview{Ask: clip(body(p), maxBody), Choice: choice}, nil
}
