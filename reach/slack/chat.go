package slack

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	slackapi "github.com/slack-go/slack"

	"parley/reach"
	"parley/store"
)

// Chat posts a project's asks with the project's own Slack app; it is the
// reach.Chat the server wires in. A post's reference is "<channel> <ts>".
type Chat struct {
	APIURL string // tests: slacktest's URL
}

var _ reach.Chat = Chat{}

func (ch Chat) conn(pr store.ProjectReach) Conn { return ConnOf(pr, ch.APIURL) }

// ConnOf is the Slack connection of a project's settings; api replaces
// Slack's Web API URL ("" = slack.com; tests).
func ConnOf(pr store.ProjectReach, api string) Conn {
	return Conn{Token: pr.SlackToken, SigningSecret: pr.SlackSecret, Channel: pr.SlackChannel, APIURL: api}
}

// Post posts m to the project's channel.
func (ch Chat) Post(ctx context.Context, pr store.ProjectReach, m reach.Message) (ref string, err error) {
	channel, ts, err := Post(ctx, ch.conn(pr), m)
	if err != nil {
		return "", err
	}
	return channel + " " + ts, nil
}

// Update rewrites the post ref as m shows it.
func (ch Chat) Update(ctx context.Context, pr store.ProjectReach, ref string, m reach.Message) error {
	channel, ts, ok := strings.Cut(ref, " ")
	if !ok {
		return fmt.Errorf("update slack message: %q is not a reference Post gave", ref)
	}
	return Update(ctx, ch.conn(pr), channel, ts, m)
}

// Tell shows text to the person who clicked, and to nobody else, through
// the interaction's response URL. A click is answered nowhere else: Slack
// ignores the body of the response to a block_actions request.
func Tell(ctx context.Context, c Conn, responseURL, text string) error {
	if err := checkResponseURL(c, responseURL); err != nil {
		return err
	}
	msg := &slackapi.WebhookMessage{Text: text, ResponseType: slackapi.ResponseTypeEphemeral, ReplaceOriginal: false}
	if err := slackapi.PostWebhookContext(ctx, responseURL, msg); err != nil {
		var ue *url.Error
		if errors.As(err, &ue) { // the URL is a credential for the message
			err = ue.Err
		}
		return fmt.Errorf("tell the slack user: %w", err)
	}
	return nil
}

// checkResponseURL refuses a response URL that is not Slack's (or, in
// tests, the fake's): even a signed payload does not choose where Parley
// posts.
func checkResponseURL(c Conn, raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("slack response url: %w", err)
	}
	if c.APIURL != "" {
		api, err := url.Parse(c.APIURL)
		if err == nil && u.Scheme == api.Scheme && u.Host == api.Host {
			return nil
		}
	}
	if u.Scheme != "https" || u.Host != "hooks.slack.com" || u.User != nil {
		return fmt.Errorf("slack response url: %s://%s is not Slack's (https://hooks.slack.com/…)", u.Scheme, u.Host)
	}
	return nil
}
