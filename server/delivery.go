package server

import (
	"encoding/json"

	"github.com/a-h/templ"

	"parley/runner"
	"parley/store"
	"parley/views"
)

// The delivery line of an answered card, by how the answer reached Claude.
const (
	deliveredText   = "Delivered to Claude"
	newTurnText     = "Claude had stopped; the answer was sent as a new message"
	undeliveredText = "Not delivered yet — will be sent when Claude resumes"
)

// askDelivered renders an input_delivered event: the card says how the
// answer reached Claude.
func askDelivered(e store.Event) []templ.Component {
	var p struct {
		InputID string `json:"input_id"`
		How     string `json:"how"`
	}
	_ = json.Unmarshal(e.Payload, &p)
	if p.How == runner.DeliveredNewTurn {
		return []templ.Component{views.AskDelivery(p.InputID, "new-turn", newTurnText)}
	}
	return []templ.Component{views.AskDelivery(p.InputID, "delivered", deliveredText)}
}

// askUndelivered renders an input_undelivered event: the answers wait for
// the session's next run.
func askUndelivered(e store.Event) []templ.Component {
	var p struct {
		InputIDs []string `json:"input_ids"`
	}
	_ = json.Unmarshal(e.Payload, &p)
	out := make([]templ.Component, 0, len(p.InputIDs))
	for _, id := range p.InputIDs {
		out = append(out, views.AskDelivery(id, "pending", undeliveredText))
	}
	return out
}
