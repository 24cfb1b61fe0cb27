package slack_test

import (
	"strings"
	"testing"
	"time"

	"parley/reach"
	"parley/reach/slack"
	"parley/store"
)

func TestChatUpdatesWhatItPosted(t *testing.T) {
	fake, _ := connect(t)
	ch := slack.Chat{APIURL: fake.URL}
	pr := store.ProjectReach{SlackToken: token, SlackSecret: "shh", SlackChannel: "#parley"}
	ref, err := ch.Post(t.Context(), pr, ask("permission", reach.Action{ID: "allow", Title: "Allow"}))
	if err != nil {
		t.Fatal(err)
	}
	done := ask("permission")
	done.Type, done.By, done.Via = reach.TypeAnswered, "Ann", "her phone"
	if err := ch.Update(t.Context(), pr, ref, done); err != nil {
		t.Fatal(err)
	}
	calls := fake.Calls()
	post, update := calls[len(calls)-2], calls[len(calls)-1]
	if update.Method != "chat.update" || update.Channel != "CPARLEY" || update.TS != post.TS || update.Error != "" {
		t.Errorf("update = %+v, want chat.update of CPARLEY %s", update, post.TS)
	}
	if err := ch.Update(t.Context(), pr, "no-space", done); err == nil {
		t.Errorf("Update of a malformed reference passed")
	}
}

func TestTellShowsTheClickerWhy(t *testing.T) {
	fake, conn := connect(t)
	req := fake.Click(t, target, secret, "U0STRANGER", "in-7", "allow", "CPARLEY", "1.2", time.Now())
	body, err := slack.Verify(req, secret, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	in, err := slack.ParseInteraction(body)
	if err != nil {
		t.Fatal(err)
	}
	const why = "Parley knows no member with your Slack e-mail: ask an owner to add you."
	if err := slack.Tell(t.Context(), conn, in.ResponseURL, why); err != nil {
		t.Fatal(err)
	}
	calls := fake.Calls()
	got := calls[len(calls)-1]
	if got.Method != "response_url" || got.Text != why || got.ResponseType != "ephemeral" || got.ReplaceOriginal {
		t.Errorf("the response = %+v, want an ephemeral %q that keeps the message", got, why)
	}
}

// Even from a signed payload, Parley posts only to Slack's hooks.
func TestTellRefusesAResponseURLThatIsNotSlacks(t *testing.T) {
	fake, conn := connect(t)
	for _, u := range []string{"http://127.0.0.1:9/actions/x", "https://hooks.slack.com.evil.test/x",
		"http://hooks.slack.com/actions/x", "https://user@hooks.slack.com/x"} {
		for _, c := range []slack.Conn{conn, {Token: token}} {
			if err := slack.Tell(t.Context(), c, u, "hi"); err == nil || !strings.Contains(err.Error(), "not Slack's") {
				t.Errorf("Tell to %s (API %q): %v, want a refusal", u, c.APIURL, err)
			}
		}
	}
	if n := len(fake.Calls()); n != 0 {
		t.Errorf("the fake got %d calls", n)
	}
}
