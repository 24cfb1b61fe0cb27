package slacktest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Interaction builds the request Slack sends to url when userID clicks the
// button actionID of the ask inputID in the message channel/ts: a
// block_actions payload in the form field "payload", signed at time at with
// signingSecret. Pass another secret to forge it, an at more than five
// minutes old to make it stale.
func Interaction(t testing.TB, url, signingSecret, userID, inputID, actionID, channel, ts string, at time.Time) *http.Request {
	t.Helper()
	return interaction(t, url, signingSecret, userID, inputID, actionID, channel, ts, at,
		"https://hooks.slack.com/actions/"+TeamID+"/1/x")
}

// Click is Interaction with a response URL on the fake, which records
// what is posted to it as a Call of method "response_url".
func (s *Server) Click(t testing.TB, url, signingSecret, userID, inputID, actionID, channel, ts string, at time.Time) *http.Request {
	t.Helper()
	s.mu.Lock()
	s.seq++
	n := s.seq
	s.mu.Unlock()
	return interaction(t, url, signingSecret, userID, inputID, actionID, channel, ts, at,
		fmt.Sprintf("%s/actions/%s/%d/x", s.URL, TeamID, n))
}

func interaction(t testing.TB, url, signingSecret, userID, inputID, actionID, channel, ts string, at time.Time, responseURL string) *http.Request {
	t.Helper()
	body := payload(t, userID, inputID, actionID, channel, ts, at, responseURL)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatalf("build slack interaction: %v", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	Sign(req.Header, signingSecret, at, []byte(body))
	return req
}

// Sign sets the headers Slack signs a request with. Slack: "concatenate
// the version number, the timestamp, and the body of the request to form a
// basestring. Use a colon as the delimiter … v0:timestamp:body", then
// "hash the resulting string, using the signing secret as a key, and take
// the hex digest", sent as X-Slack-Signature "v0=" + digest.
func Sign(h http.Header, secret string, at time.Time, body []byte) {
	ts := strconv.FormatInt(at.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(mac, "v0:%s:%s", ts, body)
	h.Set("X-Slack-Request-Timestamp", ts)
	h.Set("X-Slack-Signature", "v0="+hex.EncodeToString(mac.Sum(nil)))
}

// payload is a block_actions payload as Slack documents it, URL-encoded.
func payload(t testing.TB, userID, inputID, actionID, channel, ts string, at time.Time, responseURL string) string {
	p := map[string]any{
		"type":         "block_actions",
		"user":         map[string]any{"id": userID, "username": strings.ToLower(userID), "name": strings.ToLower(userID), "team_id": TeamID},
		"api_app_id":   "A0PARLEY",
		"token":        "deprecated-verification-token",
		"container":    map[string]any{"type": "message", "message_ts": ts, "channel_id": channel, "is_ephemeral": false},
		"trigger_id":   "1.2.3",
		"team":         map[string]any{"id": TeamID, "domain": "parley-test"},
		"channel":      map[string]any{"id": channel, "name": "parley"},
		"message":      map[string]any{"type": "message", "ts": ts, "text": "an ask"},
		"state":        map[string]any{"values": map[string]any{}},
		"response_url": responseURL,
		"actions": []map[string]any{{
			"action_id": "parley:0:" + actionID,
			"block_id":  "parley-ask:" + inputID,
			"text":      map[string]any{"type": "plain_text", "text": actionID, "emoji": true},
			"value":     actionID,
			"type":      "button",
			"action_ts": fmt.Sprintf("%d.000100", at.Unix()),
		}},
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatalf("encode slack interaction: %v", err)
	}
	return url.Values{"payload": {string(b)}}.Encode()
}
