package server

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/a-h/templ"

	"parley/askuser"
	"parley/store"
	"parley/views"
)

// askRequested renders an input_requested event: the card of an ask.
func askRequested(e store.Event) []templ.Component {
	return []templ.Component{appendTo(views.AskCard(askView(e.Payload))), views.Status("waiting", true)}
}

// askResolved renders an input_resolved event: the card's outcome.
func askResolved(e store.Event) []templ.Component {
	return []templ.Component{askClosed(e.Payload)}
}

// askView reads an input_requested payload into a card.
func askView(payload []byte) views.Ask {
	var p struct {
		InputID  string           `json:"input_id"`
		Question askuser.Question `json:"question"`
		Deadline time.Time        `json:"deadline"`
	}
	_ = json.Unmarshal(payload, &p)
	a := views.Ask{ID: p.InputID, Question: p.Question.Question, MultiSelect: p.Question.MultiSelect}
	for _, o := range p.Question.Options {
		a.Options = append(a.Options, views.AskOption{Label: o.Label, Description: o.Description})
	}
	if !p.Deadline.IsZero() {
		a.Deadline = p.Deadline.UTC().Format(time.RFC3339)
	}
	return a
}

// askClosed renders an input_resolved payload.
func askClosed(payload []byte) templ.Component {
	var p struct {
		InputID    string         `json:"input_id"`
		Status     string         `json:"status"`
		Answer     askuser.Answer `json:"answer"`
		AnsweredBy string         `json:"answered_by"`
		Reason     string         `json:"reason"`
	}
	_ = json.Unmarshal(payload, &p)
	var text string
	switch p.Status {
	case "answered":
		text = "You answered: " + answerText(p.Answer)
		if p.AnsweredBy != "" {
			text += " (" + p.AnsweredBy + ")"
		}
	case "timed_out":
		text = "Question timed out"
	default:
		text = "Question " + strings.ReplaceAll(p.Status, "_", " ")
		if p.Reason != "" {
			text += ": " + p.Reason
		}
	}
	return views.AskClosed(p.InputID, p.Status, text)
}

func answerText(a askuser.Answer) string {
	parts := append([]string{}, a.Selected...)
	if a.Text != "" {
		parts = append(parts, a.Text)
	}
	return strings.Join(parts, ", ")
}
