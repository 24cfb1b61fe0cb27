package reach

import (
	"context"
	"errors"

	"parley/store"
)

// The channels an ask goes out through. Each is optional: nil means the
// installation has none (no push keys, no SMTP server). Their packages
// (reach/webpush, reach/mail, reach/slack, reach/webhook) implement the
// sending; the server wires them in.

// ErrGone is a push device its push service no longer knows (404/410):
// it is removed.
var ErrGone = errors.New("the push service no longer knows this device")

// Pusher sends a message to one device.
type Pusher interface {
	Push(ctx context.Context, d store.PushDevice, m Message) error
}

// Link is an action of an e-mail: a URL that opens a confirm page.
type Link struct{ Title, URL string }

// Mailer sends a message to one address.
type Mailer interface {
	Mail(ctx context.Context, to string, m Message, links []Link) error
}

// Chat posts a project's asks to its chat channel and updates them.
type Chat interface {
	// Post returns a reference to the post for Update.
	Post(ctx context.Context, pr store.ProjectReach, m Message) (ref string, err error)
	Update(ctx context.Context, pr store.ProjectReach, ref string, m Message) error
}

// Hook posts a message to a project's outgoing webhook.
type Hook interface {
	Post(ctx context.Context, pr store.ProjectReach, m Message) error
}

// Channels are the ways out.
type Channels struct {
	Push  Pusher
	Mail  Mailer
	Slack Chat
	Hook  Hook
}
