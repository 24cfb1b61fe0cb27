package webhook_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"parley/reach"
	"parley/reach/webhook"
	"parley/store"
)

const secret = "whsec-parley-test"

func ask() reach.Message {
	return reach.Message{
		Type: reach.TypeAsk, InputID: "in-7", Kind: "permission", Title: "Claude wants to run Bash",
		Body: "make test", Project: "atlas", Session: "Fix the build", URL: "https://parley.test/sessions/3#ask-in-7",
		Actions: []reach.Action{{ID: "allow", Title: "Allow"}, {ID: "deny", Title: "Deny"}},
		Token:   "single-use-token", AnswerURL: "https://parley.test/reach/answer",
	}
}

// receiver verifies each delivery as a receiver would and keeps its body.
func receiver(t *testing.T, status int) (url string, got <-chan []byte) {
	ch := make(chan []byte, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := webhook.Verify(r, secret, time.Now())
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		ch <- body
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/hooks/s3cr3t-path", ch
}

func TestPostRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    reach.Message
	}{
		{"ask", ask()},
		{"answered", reach.Message{Type: reach.TypeAnswered, InputID: "in-7", Title: "Claude wants to run Bash", By: "Ann", Via: "Slack"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, got := receiver(t, http.StatusNoContent)
			if err := webhook.Post(t.Context(), http.DefaultClient, url, secret, tc.m); err != nil {
				t.Fatal(err)
			}
			body := <-got
			var e webhook.Event
			if err := json.Unmarshal(body, &e); err != nil {
				t.Fatalf("decode %s: %v", body, err)
			}
			want := tc.m
			want.Token, want.AnswerURL = "", ""
			if d := cmp.Diff(webhook.Event{Event: tc.m.Type, Message: want}, e); d != "" {
				t.Errorf("delivery (-want +got):\n%s", d)
			}
			if bytes.Contains(body, []byte("single-use-token")) || bytes.Contains(body, []byte(`"token"`)) {
				t.Errorf("the delivery carries the answer token: %s", body)
			}
		})
	}
}

func TestPostFailsOnAnErrorStatus(t *testing.T) {
	url, _ := receiver(t, http.StatusInternalServerError)
	err := webhook.Post(t.Context(), http.DefaultClient, url, secret, ask())
	if err == nil || !strings.Contains(err.Error(), "500") {
		t.Fatalf("Post to a failing receiver: %v, want an error with 500", err)
	}
	if strings.Contains(err.Error(), "s3cr3t-path") {
		t.Errorf("the error carries the webhook's path: %v", err)
	}
	// A receiver that does not share the secret refuses the delivery.
	if err := webhook.Post(t.Context(), http.DefaultClient, url, "another secret", ask()); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("Post with the wrong secret: %v, want 401", err)
	}
}

func delivery(t *testing.T, signWith string, at time.Time, body string) *http.Request {
	r := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/hook", strings.NewReader(body))
	ts := at.Unix()
	r.Header.Set(webhook.HeaderTimestamp, strconv.FormatInt(ts, 10))
	r.Header.Set(webhook.HeaderSignature, webhook.Sign(signWith, ts, []byte(body)))
	return r
}

func TestVerify(t *testing.T) {
	now := time.Now()
	body := `{"event":"ask","input_id":"in-7"}`
	changed := delivery(t, secret, now, body)
	changed.Body = io.NopCloser(strings.NewReader(strings.Replace(body, "in-7", "in-8", 1)))
	v0 := delivery(t, secret, now, body)
	v0.Header.Set(webhook.HeaderSignature, strings.Replace(v0.Header.Get(webhook.HeaderSignature), "v1=", "v0=", 1))
	noTS := delivery(t, secret, now, body)
	noTS.Header.Del(webhook.HeaderTimestamp)
	endless := delivery(t, secret, now, body)
	endless.Body = io.NopCloser(io.MultiReader(strings.NewReader(strings.Repeat("x", webhook.MaxBody+1)), pastLimit{}))
	for _, tc := range []struct {
		name string
		req  *http.Request
		want error
	}{
		{"signed", delivery(t, secret, now, body), nil},
		{"signed 4 minutes ago", delivery(t, secret, now.Add(-4*time.Minute), body), nil},
		{"forged", delivery(t, "not-the-secret", now, body), webhook.ErrSignature},
		{"stale", delivery(t, secret, now.Add(-6*time.Minute), body), webhook.ErrStale},
		{"from the future", delivery(t, secret, now.Add(6*time.Minute), body), webhook.ErrStale},
		{"body changed", changed, webhook.ErrSignature},
		{"another version", v0, webhook.ErrSignature},
		{"no timestamp", noTS, webhook.ErrSignature},
		{"too large", endless, webhook.ErrTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := webhook.Verify(tc.req, secret, now)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Verify: %v, want %v", err, tc.want)
			}
			if err == nil && string(got) != body {
				t.Errorf("Verify returned %q, want %q", got, body)
			}
		})
	}
}

// The signature is the documented one, computed here independently.
func TestSignIsHMACOfTimestampDotBody(t *testing.T) {
	got := webhook.Sign("key", 1700000000, []byte(`{"a":1}`))
	// printf '1700000000.{"a":1}' | openssl dgst -sha256 -hmac key
	want := "v1=a438e398bfafc57e4396bb7fc2304422f0f768e965d073ca313cb52e22e6ad03"
	if got != want {
		t.Errorf("Sign = %s, want %s", got, want)
	}
}

type pastLimit struct{}

func (pastLimit) Read([]byte) (int, error) { return 0, errors.New("read past the limit") }

// A webhook's path is often its secret; errors go to logs.
func TestPostErrorsHideThePath(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close() // nobody listens any more
	err := webhook.Post(t.Context(), http.DefaultClient, srv.URL+"/hooks/s3cr3t-path", secret, ask())
	if err == nil || strings.Contains(err.Error(), "s3cr3t-path") {
		t.Errorf("Post to a closed port: %v, want an error without the path", err)
	}
}

func TestHookPostsToTheProjectsWebhook(t *testing.T) {
	url, got := receiver(t, http.StatusOK)
	h := webhook.Hook{Client: http.DefaultClient}
	if err := h.Post(t.Context(), store.ProjectReach{WebhookURL: url, WebhookSecret: secret}, ask()); err != nil {
		t.Fatal(err)
	}
	if body := <-got; !bytes.Contains(body, []byte(`"event":"ask"`)) {
		t.Errorf("delivery %s, want the ask event", body)
	}
	if err := h.Post(t.Context(), store.ProjectReach{WebhookURL: url, WebhookSecret: "old secret"}, ask()); err == nil {
		t.Errorf("a delivery signed with another secret was taken")
	}
}
