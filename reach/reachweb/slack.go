package reachweb

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"parley/reach"
	"parley/reach/slack"
	"parley/store"
)

// Slack takes the clicks on an ask's buttons in a project's Slack
// channel: POST /slack/interactions/{project}, the Slack app's
// interactivity request URL. Each request must carry the project's
// signing secret's signature from the last five minutes; the clicker is
// the Parley member with their Slack e-mail, and the ask must be the
// project's. Slack wants an answer within 3 s, so the request is answered
// at once and the outcome, when it is a refusal, is said to the clicker
// alone through the interaction's response_url; the channel's message
// shows "Answered by X" once the ask closes (reach's take-back).
type Slack struct {
	St  *store.Store
	A   *reach.Answerer
	API string // Slack's Web API URL ("" = slack.com; tests)
	Log *slog.Logger
}

func (h Slack) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	pid, err := strconv.ParseInt(r.PathValue("project"), 10, 64)
	if err != nil {
		http.Error(w, "no such project", http.StatusNotFound)
		return
	}
	pr, err := h.St.ProjectReachOf(r.Context(), pid)
	if err != nil || pr.SlackSecret == "" {
		http.Error(w, "this project has no Slack connection", http.StatusNotFound)
		return
	}
	body, err := slack.Verify(r, pr.SlackSecret, time.Now())
	if err != nil {
		http.Error(w, "the request's Slack signature is missing, wrong or stale", http.StatusUnauthorized)
		return
	}
	it, err := slack.ParseInteraction(body)
	if err != nil {
		http.Error(w, "not a click on a Parley ask", http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusOK)
	if it.Action == reach.ActOpen {
		return
	}
	go h.click(context.WithoutCancel(r.Context()), pid, pr, it)
}

// click answers one click, telling the clicker when it is refused.
func (h Slack) click(ctx context.Context, pid int64, pr store.ProjectReach, it slack.Interaction) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	out := h.answer(ctx, pid, pr, it)
	if out.Status != http.StatusOK {
		if err := slack.Tell(ctx, slack.ConnOf(pr, h.API), it.ResponseURL, out.Text); err != nil {
			h.Log.Info("slack: telling the clicker", "input_id", it.InputID, "err", err)
		}
	}
	h.Log.Info("slack answer", "project_id", pid, "input_id", it.InputID, "slack_user", it.UserID, "status", out.Status, "outcome", out.Text)
}

func (h Slack) answer(ctx context.Context, pid int64, pr store.ProjectReach, it slack.Interaction) reach.Outcome {
	in, err := h.St.GetInput(ctx, it.InputID)
	if err != nil {
		return reach.Outcome{Status: http.StatusNotFound, Text: "This ask no longer exists in Parley."}
	}
	if sess, err := h.St.GetSession(ctx, in.SessionID); err != nil || sess.ProjectID != pid {
		return reach.Outcome{Status: http.StatusForbidden, Text: "This ask is not one of this Slack app's project."}
	}
	email, err := slack.EmailOf(ctx, slack.ConnOf(pr, h.API), it.UserID)
	if err != nil {
		return reach.Outcome{Status: http.StatusForbidden, Text: "Parley could not read your Slack e-mail address, by which it knows you: " + err.Error()}
	}
	u, err := h.St.UserByEmail(ctx, email)
	if errors.Is(err, store.ErrNotFound) {
		return reach.Outcome{Status: http.StatusForbidden, Text: "Your Slack e-mail " + email + " is not a Parley account's, so you cannot answer from Slack. Ask an owner to add you, or answer in Parley."}
	}
	if err != nil {
		return reach.Outcome{Status: http.StatusServiceUnavailable, Text: "Parley could not look you up; try again."}
	}
	return h.A.As(ctx, u.ID, in.ID, it.Action, "Slack")
}
