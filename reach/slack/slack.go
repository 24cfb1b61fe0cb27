// Package slack brings an ask to a Slack channel and takes the answer back
// from its buttons.
//
// A project connects a Slack app of its own: its bot token and signing
// secret. The app needs the bot scopes chat:write (post and update the ask),
// users:read and users:read.email (map the Slack user who clicked to a
// Parley member by e-mail), and Interactivity turned on with the request URL
// <base>/slack/interactions/<project id>, where each click arrives signed
// with the signing secret (see Verify and ParseInteraction).
//
// The Web API is spoken through github.com/slack-go/slack.
package slack

import (
	"context"
	"errors"
	"fmt"
	"strings"

	slackapi "github.com/slack-go/slack"

	"parley/reach"
)

// Conn is one project's connection to its Slack app.
type Conn struct {
	Token         string // the bot token, xoxb-…
	SigningSecret string // checks the interactions Slack sends (Verify)
	Channel       string // where asks are posted: an ID (C…) or #name
	// APIURL replaces https://slack.com/api (tests: slacktest's URL).
	APIURL string
}

func (c Conn) client() *slackapi.Client {
	if c.APIURL == "" {
		return slackapi.New(c.Token)
	}
	return slackapi.New(c.Token, slackapi.OptionAPIURL(strings.TrimSuffix(c.APIURL, "/")+"/"))
}

// Post posts the ask m to the connection's channel, with a button for each
// of its actions. It returns the channel's ID and the message's timestamp,
// which together name the message for Update.
func Post(ctx context.Context, c Conn, m reach.Message) (channel, ts string, err error) {
	channel, ts, err = c.client().PostMessageContext(ctx, c.Channel,
		slackapi.MsgOptionText(fallback(m), true),
		slackapi.MsgOptionBlocks(blocks(m)...),
		slackapi.MsgOptionDisableLinkUnfurl())
	if err != nil {
		return "", "", fmt.Errorf("post the ask %s to slack channel %s: %w", m.InputID, c.Channel, err)
	}
	return channel, ts, nil
}

// Update rewrites the message at channel and ts as m shows it. For an
// answered ask (m.Type reach.TypeAnswered) the buttons give way to
// "Answered by X (via)"; chat.update replaces the whole message, so m must
// still carry the ask's Title and Body for the question to stay readable.
func Update(ctx context.Context, c Conn, channel, ts string, m reach.Message) error {
	_, _, _, err := c.client().UpdateMessageContext(ctx, channel, ts,
		slackapi.MsgOptionText(fallback(m), true),
		slackapi.MsgOptionBlocks(blocks(m)...))
	if err != nil {
		return fmt.Errorf("update slack message %s in %s for ask %s: %w", ts, channel, m.InputID, err)
	}
	return nil
}

// EmailOf returns the e-mail address of the Slack user userID (users.info),
// by which the user is mapped to a Parley member.
func EmailOf(ctx context.Context, c Conn, userID string) (string, error) {
	u, err := c.client().GetUserInfoContext(ctx, userID)
	if err != nil {
		var se slackapi.SlackErrorResponse
		if errors.As(err, &se) && se.Err == "user_not_found" {
			return "", fmt.Errorf("slack knows no user %s in this workspace: %w", userID, err)
		}
		return "", fmt.Errorf("slack users.info %s: %w", userID, err)
	}
	if u.Profile.Email == "" {
		return "", fmt.Errorf("slack gave no e-mail for user %s: give the Slack app the users:read.email scope and reinstall it", userID)
	}
	return u.Profile.Email, nil
}

// Check proves the token works (auth.test) and returns the ID of the
// workspace it belongs to, which every interaction's TeamID must match.
func Check(ctx context.Context, c Conn) (teamID string, err error) {
	r, err := c.client().AuthTestContext(ctx)
	if err != nil {
		return "", fmt.Errorf("slack auth.test: %w", err)
	}
	return r.TeamID, nil
}
