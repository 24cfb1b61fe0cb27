package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strings"

	"parley/act"
	"parley/reach"
	"parley/reach/connect"
	"parley/reach/mail"
	"parley/reach/netguard"
	"parley/reach/reachweb"
	"parley/reach/webpush"
	"parley/server"
	"parley/store"
)

// reachConfig is how asks reach people who are not looking (package reach).
type reachConfig struct {
	PublicURL   string // PARLEY_PUBLIC_URL
	PushHosts   string // PARLEY_PUSH_HOSTS
	PushSubject string // PARLEY_PUSH_SUBJECT
	SMTPURL     string // PARLEY_SMTP_URL
	// SlackAPIURL replaces Slack's Web API (tests only; no variable).
	SlackAPIURL string
}

// publicURL is where people reach this Parley.
func (c reachConfig) publicURL(addr string) string {
	if c.PublicURL != "" {
		return strings.TrimRight(c.PublicURL, "/")
	}
	return "http://" + addr
}

// subject is the VAPID contact.
func (c reachConfig) subject(base string) string {
	switch {
	case c.PushSubject != "":
		return c.PushSubject
	case strings.HasPrefix(base, "https://"):
		return base
	}
	return "mailto:parley@localhost"
}

// checkReach refuses settings that cannot work, before anything starts.
func checkReach(c reachConfig) error {
	if c.PublicURL != "" {
		u, err := url.Parse(c.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("PARLEY_PUBLIC_URL %q is not an http(s) URL such as https://parley.example.com", c.PublicURL)
		}
	}
	if c.SMTPURL != "" {
		if _, err := mailConfig(c.SMTPURL); err != nil {
			return fmt.Errorf("PARLEY_SMTP_URL: %w", err)
		}
	}
	return nil
}

// newReach makes the Reacher and its HTTP surface. acts answers for
// people (the server's act.Service), known only once the server exists:
// it is set by the returned function.
func newReach(ctx context.Context, c reachConfig, addr string, st *store.Store, log *slog.Logger) (*server.Reach, func(act.Service), error) {
	keys, err := pushKeys(ctx, st)
	if err != nil {
		return nil, nil, err
	}
	allowed := netguard.ParseHosts(c.PushHosts)
	base := c.publicURL(addr)
	ch := connect.Channels(connect.Config{Allowed: allowed, Keys: keys, Subject: c.subject(base), SlackAPIURL: c.SlackAPIURL})
	if c.SMTPURL != "" {
		mc, err := mailConfig(c.SMTPURL)
		if err != nil {
			return nil, nil, err
		}
		ch.Mail = connect.Mailer(mc)
	}
	r := reach.New(st, ch, reach.Config{BaseURL: base}, log.With("part", "reach"))
	acts := &lateActs{}
	ans := reach.NewAnswerer(st, acts)
	check := func(endpoint string) error { _, err := netguard.CheckURL(endpoint, allowed); return err }
	rc := &server.Reach{Reacher: r, Answers: reachweb.Answers{A: ans},
		Devices: reachweb.Devices{St: st, R: r, PublicKey: keys.Public, CheckEndpoint: check},
		Slack:   reachweb.Slack{St: st, A: ans, API: c.SlackAPIURL, Log: log},
		Check:   check, SlackAPI: c.SlackAPIURL}
	return rc, func(s act.Service) { acts.Service = s }, nil
}

// pushKeys are the installation's VAPID keys, made the first time.
func pushKeys(ctx context.Context, st *store.Store) (webpush.Keys, error) {
	pub, priv, err := st.ReachKeys(ctx, func() (string, string, error) {
		k, err := webpush.NewKeys()
		return k.Public, k.Private, err
	})
	return webpush.Keys{Public: pub, Private: priv}, err
}

// mailConfig reads PARLEY_SMTP_URL.
func mailConfig(s string) (mail.Config, error) { return mail.ParseURL(s) }

// lateActs is the server's act.Service once the server exists.
type lateActs struct{ act.Service }
