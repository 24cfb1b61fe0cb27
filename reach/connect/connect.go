// Package connect makes reach's channels from the installation's
// settings: Web Push with the installation's VAPID keys, e-mail over
// SMTP, each project's Slack app and webhook. Every outgoing request
// goes through a netguard client: a URL Parley posts to never lands on a
// private address unless the operator allowed its host
// (PARLEY_PUSH_HOSTS).
package connect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"parley/reach"
	"parley/reach/mail"
	"parley/reach/netguard"
	"parley/reach/slack"
	"parley/reach/webhook"
	"parley/reach/webpush"
	"parley/store"
)

// Config is what the channels are made from.
type Config struct {
	// Allowed are the hosts that may be on a private address or plain
	// http (PARLEY_PUSH_HOSTS).
	Allowed []string
	// Keys are the VAPID keys; Subject the contact the push services see
	// (a mailto: or https URL). Zero Keys: no push.
	Keys    webpush.Keys
	Subject string
	// SlackAPIURL replaces https://slack.com/api (tests).
	SlackAPIURL string
	// Timeout bounds each request (default 10 s).
	Timeout time.Duration
}

// Channels returns the channels cfg allows.
func Channels(cfg Config) reach.Channels {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	client := netguard.Client(cfg.Allowed, cfg.Timeout)
	ch := reach.Channels{Slack: slack.Chat{APIURL: cfg.SlackAPIURL}, Hook: webhook.Hook{Client: client}}
	if cfg.Keys.Public != "" {
		ch.Push = pusher{s: &webpush.Sender{Keys: cfg.Keys, Subject: cfg.Subject, Client: client}}
	}
	return ch
}

// pusher sends messages with Web Push.
type pusher struct{ s *webpush.Sender }

func (p pusher) Push(ctx context.Context, d store.PushDevice, m reach.Message) error {
	payload, err := payloadOf(m)
	if err != nil {
		return err
	}
	urgency := "high"
	if m.Type == reach.TypeAnswered {
		urgency = "normal"
	}
	// One topic per ask: a push still waiting at the push service (the
	// phone is offline) is replaced by the news that it was answered.
	err = p.s.Send(ctx, webpush.Subscription{Endpoint: d.Endpoint, P256dh: d.P256dh, Auth: d.Auth}, payload, urgency, webpush.TopicFor(m.InputID))
	if errors.Is(err, webpush.ErrGone) {
		return fmt.Errorf("%w: %w", reach.ErrGone, err)
	}
	return err
}

// payloadOf encodes m within a push's size, shortening its body if need be.
// The texts around the body (the options the model wrote, the session's
// title) are cut to a line first, so the body's shortening always ends.
func payloadOf(m reach.Message) ([]byte, error) {
	m.Title, m.Project, m.Session = line(m.Title), line(m.Project), line(m.Session)
	m.By, m.Via = line(m.By), line(m.Via)
	m.Actions = append([]reach.Action(nil), m.Actions...)
	for i := range m.Actions {
		m.Actions[i].Title = line(m.Actions[i].Title)
	}
	for {
		b, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		if len(b) <= webpush.MaxPayload {
			return b, nil
		}
		if m.Body == "" {
			return nil, fmt.Errorf("push message of %d bytes without its body, at most %d fit", len(b), webpush.MaxPayload)
		}
		r := []rune(m.Body)
		m.Body = ""
		if n := len(r) * 2 / 3; n > 0 {
			m.Body = string(r[:n]) + "…"
		}
	}
}

// maxLine bounds a push's title, names and action titles, in runes.
const maxLine = 120

// line cuts s to maxLine runes, marking the cut.
func line(s string) string {
	r := []rune(s)
	if len(r) <= maxLine {
		return s
	}
	return string(r[:maxLine-1]) + "…"
}

// Mailer sends asks by e-mail through the SMTP server of c.
func Mailer(c mail.Config) reach.Mailer { return mailer{c: c} }

type mailer struct{ c mail.Config }

func (m mailer) Mail(ctx context.Context, to string, msg reach.Message, links []reach.Link) error {
	ls := make([]mail.Link, len(links))
	for i, l := range links {
		ls[i] = mail.Link{Title: l.Title, URL: l.URL}
	}
	return mail.Send(ctx, m.c, to, msg, ls)
}
