package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"parley/reach"
	"parley/reach/slack/slacktest"
	"parley/reach/webhook"
	"parley/store"
)

// hookDelivery is one request the test's webhook receiver took.
type hookDelivery struct {
	event webhook.Event
	err   error // Verify's with the project's secret
	wrong error // Verify's with another secret
}

// TestReachWebhook: the project's outgoing webhook (a receiver on
// 127.0.0.1, an allowed host) gets the ask signed with the project's
// secret (webhook.Verify passes, another secret fails), without an answer
// token; when the ask is answered on the page, it gets the "answered"
// event naming who, and the project's Slack message (posted alongside)
// says who answered too, though the answer did not come from Slack.
func TestReachWebhook(t *testing.T) {
	const secret = "whsec-0123456789abcdef"
	got := make(chan hookDelivery, 8)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var d hookDelivery
		r.Body = io.NopCloser(bytes.NewReader(raw))
		body, err := webhook.Verify(r, secret, time.Now())
		d.err = err
		r.Body = io.NopCloser(bytes.NewReader(raw))
		_, d.wrong = webhook.Verify(r, "not-the-secret", time.Now())
		if err == nil {
			d.err = json.Unmarshal(body, &d.event)
		}
		got <- d
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rcv.Close)
	e := newReachTestEnv(t, func(pr *store.ProjectReach) {
		pr.EscalateAfter, pr.WebhookURL, pr.WebhookSecret = 0, rcv.URL+"/parley", secret
		pr.SlackToken, pr.SlackSecret, pr.SlackChannel = slackToken, slackSecret, "#parley"
	})
	sess := e.newSession()
	w := e.dial(sess.ID, 0)
	w.prompt("pick a colour")
	in := e.pendingAsk(sess.ID)

	ask := nextHook(t, got)
	if ask.event.Event != reach.TypeAsk || ask.event.InputID != in.ID || ask.event.Body != "Which colour?" ||
		ask.event.Project != "Test project" || ask.event.Token != "" || ask.event.AnswerURL != "" ||
		!strings.HasPrefix(ask.event.URL, e.web.URL+"/sessions/"+sess.ID) {
		t.Errorf("ask event = %s, want the ask without a token", asJSON(ask.event))
	}

	w.answer(in, map[string]any{"choice": "Green"})
	w.waitFor(60*time.Second, "Green it is.")
	done := nextHook(t, got)
	if done.event.Event != reach.TypeAnswered || done.event.InputID != in.ID || done.event.By != "you" || len(done.event.Actions) != 0 {
		t.Errorf("answered event = %s, want answered by you", asJSON(done.event))
	}
	select {
	case d := <-got:
		t.Errorf("a third delivery: %s", asJSON(d.event))
	case <-time.After(time.Second):
	}
	up := e.slackCall("chat.update", 1, 10*time.Second)
	if ubs, _ := slacktest.ParseBlocks(up.Blocks); !strings.Contains(slacktest.Shown(ubs), "Answered by you") {
		t.Errorf("the Slack message after an answer on the page shows %q, want answered by you", slacktest.Shown(ubs))
	}
	ds := e.waitDeliveries(in.ID, 0, func([]store.Delivery) bool { return true })
	if !hasDelivery(ds, "webhook", "sent", "") {
		t.Errorf("deliveries: %s; want the webhook's", showDeliveries(ds))
	}
}

// nextHook waits for the receiver's next delivery and checks its
// signature.
func nextHook(t *testing.T, got <-chan hookDelivery) hookDelivery {
	t.Helper()
	select {
	case d := <-got:
		if d.err != nil {
			t.Fatalf("a webhook delivery does not verify: %v", d.err)
		}
		if !errors.Is(d.wrong, webhook.ErrSignature) {
			t.Errorf("verified with another secret: %v, want ErrSignature", d.wrong)
		}
		return d
	case <-time.After(30 * time.Second):
		t.Fatal("no webhook delivery within 30 s")
	}
	return hookDelivery{}
}
