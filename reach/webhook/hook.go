package webhook

import (
	"context"
	"net/http"

	"parley/reach"
	"parley/store"
)

// Hook posts to a project's outgoing webhook; it is the reach.Hook the
// server wires in.
type Hook struct {
	Client *http.Client // netguard.Client: no private addresses, no redirects
}

var _ reach.Hook = Hook{}

// Post delivers m to the project's webhook URL, signed with its secret.
func (h Hook) Post(ctx context.Context, pr store.ProjectReach, m reach.Message) error {
	return Post(ctx, h.Client, pr.WebhookURL, pr.WebhookSecret, m)
}
