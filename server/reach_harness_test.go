package server

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"parley/act"
	"parley/reach"
	"parley/reach/connect"
	"parley/reach/mail"
	"parley/reach/mail/smtptest"
	"parley/reach/netguard"
	"parley/reach/reachweb"
	"parley/reach/slack/slacktest"
	"parley/reach/webpush"
	"parley/reach/webpush/pushtest"
	"parley/store"
)

// reachEnv is reach with real parts at its edges: a local RFC 8030 push
// service that checks VAPID and decrypts (pushtest), a real SMTP server
// (smtptest), a fake of Slack's Web API with real signatures
// (slacktest). Loopback is allowed (PARLEY_PUSH_HOSTS=127.0.0.1).
type reachEnv struct {
	keys    webpush.Keys
	push    *pushtest.Service
	smtp    *smtptest.Server
	slack   *slacktest.Server
	rch     *Reach
	acts    *lateTestActs
	allowed []string
}

// slackToken and slackSecret are the test project's Slack app.
const (
	slackToken  = "xoxb-test-token"
	slackSecret = "8f742231b10e8888abcd99yyyzzz85a5"
)

type lateTestActs struct{ act.Service }

// newReachEnv makes reach's parts before the server; startReach starts
// the Reacher once the web server's URL is known.
func newReachEnv(t testing.TB, st *store.Store, log *slog.Logger) *reachEnv {
	t.Helper()
	k, err := webpush.NewKeys()
	if err != nil {
		t.Fatal(err)
	}
	pub, priv, err := st.ReachKeys(t.Context(), func() (string, string, error) { return k.Public, k.Private, nil })
	if err != nil {
		t.Fatal(err)
	}
	r := &reachEnv{keys: webpush.Keys{Public: pub, Private: priv}, allowed: []string{"127.0.0.1"}, acts: &lateTestActs{}}
	r.push = pushtest.New(t, pub)
	r.smtp = smtptest.New(t)
	r.slack = slacktest.New(t, slackToken)
	ans := reach.NewAnswerer(st, r.acts)
	check := func(u string) error { _, err := netguard.CheckURL(u, r.allowed); return err }
	r.rch = &Reach{Answers: reachweb.Answers{A: ans},
		Devices: reachweb.Devices{St: st, PublicKey: pub, CheckEndpoint: check},
		Slack:   reachweb.Slack{St: st, A: ans, API: r.slack.URL, Log: log},
		Check:   check, SlackAPI: r.slack.URL}
	return r
}

// start makes the Reacher for the server at base and runs it until the
// test ends.
func (r *reachEnv) start(t testing.TB, e *env, base string) {
	mc, err := mail.ParseURL(r.smtp.URL())
	if err != nil {
		t.Fatal(err)
	}
	ch := connect.Channels(connect.Config{Allowed: r.allowed, Keys: r.keys, Subject: "mailto:test@example.com", SlackAPIURL: r.slack.URL})
	ch.Mail = connect.Mailer(mc)
	rr := reach.New(e.st, ch, reach.Config{BaseURL: base, Every: 100 * time.Millisecond}, slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})))
	r.rch.Reacher, r.rch.Devices.R = rr, rr
	r.acts.Service = e.srv.Acts()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); rr.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// subscribe registers a pushtest device for the user through the API,
// as the notifications page does.
func (e *env) subscribe(u *testUser, name string) webpush.Subscription {
	e.t.Helper()
	sub := e.reach.push.Subscribe()
	body, _ := json.Marshal(map[string]any{"endpoint": sub.Endpoint, "keys": map[string]string{"p256dh": sub.P256dh, "auth": sub.Auth}, "name": name})
	if res, text := e.jsonAs(u, http.MethodPost, "/push/subscriptions", string(body)); res.StatusCode != http.StatusCreated {
		e.t.Fatalf("subscribe: %s %s", res.Status, text)
	}
	return sub
}

// jsonAs sends a JSON body as u with u's CSRF header, as static/push.js
// does, and returns the response and its body.
func (e *env) jsonAs(u *testUser, method, path, body string) (*http.Response, string) {
	e.t.Helper()
	req, err := http.NewRequestWithContext(e.t.Context(), method, e.web.URL+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header = e.header(u)
	req.Header.Set("Content-Type", "application/json")
	if u != nil {
		req.Header.Set(csrfHeader, u.CSRF)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

// nextPush waits for the next push and decodes its message.
func (e *env) nextPush(timeout time.Duration) (pushtest.Push, reach.Message) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	p, err := e.reach.push.Next(ctx)
	if err != nil {
		e.t.Fatalf("no push within %s: %v (rejected: %v)", timeout, err, e.reach.push.Rejections())
	}
	var m reach.Message
	if err := json.Unmarshal(p.Payload, &m); err != nil {
		e.t.Fatalf("push payload %q: %v", p.Payload, err)
	}
	return p, m
}

// answerWithToken posts a notification's action as the service worker
// does: no cookie, no CSRF token.
func (e *env) answerWithToken(m reach.Message, action string) (int, string) {
	e.t.Helper()
	res, err := http.PostForm(m.AnswerURL, url.Values{"token": {m.Token}, "action": {action}})
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}
