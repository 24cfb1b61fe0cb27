package slack_test

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"parley/reach/slack"
	"parley/reach/slack/slacktest"
)

const (
	secret = "8f742231b10e8888abcd99yyyzzz85a5"
	target = "http://parley.test/slack/interactions"
)

func click(t *testing.T, secret string, at time.Time) *http.Request {
	return slacktest.Interaction(t, target, secret, "U0ANN", "in-7", "allow", "CPARLEY", "1800000000.000001", at)
}

func TestVerify(t *testing.T) {
	now := time.Now()
	// The allow click's signature over the deny click's body.
	tampered := click(t, secret, now)
	tampered.Body = slacktest.Interaction(t, target, secret, "U0ANN", "in-7", "deny", "CPARLEY", "1800000000.000001", now).Body
	for _, tc := range []struct {
		name string
		req  *http.Request
		want error
	}{
		{"signed", click(t, secret, now), nil},
		{"signed 4 minutes ago", click(t, secret, now.Add(-4*time.Minute)), nil},
		{"forged", click(t, "not-the-secret", now), slack.ErrSignature},
		{"stale", click(t, secret, now.Add(-6*time.Minute)), slack.ErrStale},
		{"from the future", click(t, secret, now.Add(6*time.Minute)), slack.ErrStale},
		{"body changed", tampered, slack.ErrSignature},
		{"unsigned", unsigned(t, click(t, secret, now)), slack.ErrSignature},
		{"too large", endless(t, now), slack.ErrTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, err := slack.Verify(tc.req, secret, now)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Verify: %v, want %v", err, tc.want)
			}
			if err == nil && !strings.HasPrefix(string(body), "payload=") {
				t.Errorf("Verify returned %q, want the form body", body)
			}
		})
	}
}

func unsigned(t *testing.T, r *http.Request) *http.Request {
	r.Header.Del("X-Slack-Signature")
	return r
}

// endless is a signed request whose body fails if read past MaxBody+1
// bytes: Verify must stop reading there.
func endless(t *testing.T, at time.Time) *http.Request {
	r := click(t, secret, at)
	r.Body = io.NopCloser(io.MultiReader(strings.NewReader(strings.Repeat("x", slack.MaxBody+1)), pastLimit{}))
	return r
}

type pastLimit struct{}

func (pastLimit) Read([]byte) (int, error) { return 0, errors.New("read past the limit") }

func TestParseInteractionReadsTheClick(t *testing.T) {
	body, err := slack.Verify(click(t, secret, time.Now()), secret, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	got, err := slack.ParseInteraction(body)
	if err != nil {
		t.Fatal(err)
	}
	want := slack.Interaction{UserID: "U0ANN", TeamID: slacktest.TeamID, InputID: "in-7", Action: "allow",
		Channel: "CPARLEY", TS: "1800000000.000001", ResponseURL: "https://hooks.slack.com/actions/T0PARLEY/1/x"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("interaction (-want +got):\n%s", d)
	}
}

func TestParseInteractionRefusesWhatIsNotAnAskButton(t *testing.T) {
	for _, tc := range []struct{ name, body string }{
		{"no payload", "foo=bar"},
		{"not json", "payload=" + url.QueryEscape("{")},
		{"a modal", "payload=" + url.QueryEscape(`{"type":"view_submission","user":{"id":"U0ANN"}}`)},
		{"another app's button", "payload=" + url.QueryEscape(`{"type":"block_actions","user":{"id":"U0ANN"},
			"actions":[{"type":"button","block_id":"other","action_id":"x","value":"allow"}]}`)},
		{"no input id", "payload=" + url.QueryEscape(`{"type":"block_actions","user":{"id":"U0ANN"},
			"actions":[{"type":"button","block_id":"parley-ask:","action_id":"x","value":"allow"}]}`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, err := slack.ParseInteraction([]byte(tc.body)); err == nil {
				t.Errorf("ParseInteraction = %+v, want an error", got)
			}
		})
	}
}
