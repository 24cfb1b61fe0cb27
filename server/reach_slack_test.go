package server

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"parley/reach/slack"
	"parley/reach/slack/slacktest"
	"parley/store"
)

// TestReachSlack: the project's Slack app posts the ask to its channel
// with a button per answer. Clicks are refused when the signature is
// forged or stale (401), when the Slack user's e-mail is no Parley
// account's, a viewer's or unreadable (the app lacks the scope), or when the ask is another project's (each
// refusal told to the clicker alone, the ask still pending). A member's
// click answers, once: the real CLI gives the model the answer, a second
// click is told who answered, and the channel's message becomes
// "Answered by you (Slack)".
func TestReachSlack(t *testing.T) {
	e := newReachTestEnv(t, func(pr *store.ProjectReach) {
		pr.EscalateAfter, pr.SlackToken, pr.SlackSecret, pr.SlackChannel = 0, slackToken, slackSecret, "#parley"
	})
	e.member("bob@example.com", "Bob", roleMember)
	e.member("vic@example.com", "Vic", roleViewer)
	for id, email := range map[string]string{"UYOU": "you@example.com", "UBOB": "bob@example.com",
		"UVIC": "vic@example.com", "USTRANGER": "stranger@example.com", "UNOSCOPE": ""} {
		e.reach.slack.AddUser(id, email)
	}
	const otherSecret = "0e1d2c3b4a5969788796a5b4c3d2e1f0"
	other, err := e.st.CreateProject(t.Context(), "Other project", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.st.SetProjectReach(t.Context(), other.ID, store.ProjectReach{FirstReach: "all", SlackToken: slackToken,
		SlackSecret: otherSecret, SlackChannel: "#other"}); err != nil {
		t.Fatal(err)
	}
	sess := e.newSession()
	w := e.dial(sess.ID, 0)
	w.prompt("pick a colour")
	in := e.pendingAsk(sess.ID)

	post := e.slackCall("chat.postMessage", 1, 30*time.Second)
	bs, err := slacktest.ParseBlocks(post.Blocks)
	if err != nil {
		t.Fatal(err)
	}
	buttons, blockIDs := slacktest.Buttons(bs)
	if post.Channel != "#parley" || len(buttons) < 2 || buttons[1].Value != "choice:1" || buttons[1].Text.Text != "Green" ||
		blockIDs[1] != slack.BlockPrefix+in.ID {
		t.Fatalf("chat.postMessage to %q with buttons %+v in %v; want Blue and Green for the ask", post.Channel, buttons, blockIDs)
	}
	channel, ts := slacktest.ChannelID(post.Channel), post.TS
	here := e.web.URL + "/slack/interactions/" + strconv.FormatInt(e.project.ID, 10)
	click := func(url, secret, user string, at time.Time) int {
		t.Helper()
		res, err := http.DefaultClient.Do(e.reach.slack.Click(t, url, secret, user, in.ID, "choice:1", channel, ts, at))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}

	if code := click(here, "not-the-signing-secret", "UYOU", time.Now()); code != http.StatusUnauthorized {
		t.Errorf("a forged signature: %d, want 401", code)
	}
	if code := click(here, otherSecret, "UYOU", time.Now()); code != http.StatusUnauthorized {
		t.Errorf("signed with another project's secret: %d, want 401", code)
	}
	if code := click(here, slackSecret, "UYOU", time.Now().Add(-6*time.Minute)); code != http.StatusUnauthorized {
		t.Errorf("a stale signature: %d, want 401", code)
	}
	refusals := []struct{ url, secret, user, want string }{
		{here, slackSecret, "USTRANGER", "stranger@example.com is not a Parley account"},
		{here, slackSecret, "UVIC", "Viewers can watch this project but not answer"},
		{here, slackSecret, "UNOSCOPE", "could not read your Slack e-mail"},
		{e.web.URL + "/slack/interactions/" + strconv.FormatInt(other.ID, 10), otherSecret, "UYOU", "not one of this Slack app's project"},
	}
	for i, r := range refusals {
		if code := click(r.url, r.secret, r.user, time.Now()); code != http.StatusOK {
			t.Fatalf("click %d: %d, want 200 (refusals are told through response_url)", i, code)
		}
		told := e.slackCall("response_url", i+1, 10*time.Second)
		if told.ResponseType != "ephemeral" || told.ReplaceOriginal || !strings.Contains(told.Text, r.want) || told.Text == "" {
			t.Errorf("%s was told %+v, want an ephemeral %q", r.user, told, r.want)
		}
		t.Logf("%s told: %q", r.user, told.Text)
		if s := e.askStatus(in.ID); s != "pending" {
			t.Fatalf("after %s's refused click the ask is %s", r.user, s)
		}
	}

	if code := click(here, slackSecret, "UYOU", time.Now()); code != http.StatusOK {
		t.Fatalf("your click: %d", code)
	}
	w.waitFor(60*time.Second, "Green it is.")
	e.wantModelGot("User selected: Green")
	if got, _ := e.st.GetInput(t.Context(), in.ID); got.AnsweredBy != "you" || !strings.Contains(string(got.Answer), `"Slack"`) {
		t.Errorf("ask = %s by %q: %s; want answered by you via Slack", got.Status, got.AnsweredBy, got.Answer)
	}
	if code := click(here, slackSecret, "UBOB", time.Now()); code != http.StatusOK {
		t.Fatalf("Bob's late click: %d", code)
	}
	if told := e.slackCall("response_url", len(refusals)+1, 10*time.Second); !strings.Contains(told.Text, "Already answered by you") {
		t.Errorf("Bob was told %q, want already answered by you", told.Text)
	}
	up := e.slackCall("chat.update", 1, 10*time.Second)
	ubs, _ := slacktest.ParseBlocks(up.Blocks)
	if up.TS != ts || up.Error != "" || !strings.Contains(slacktest.Shown(ubs), "Answered by you (Slack)") {
		t.Errorf("chat.update %+v shows %q; want the message answered by you (Slack)", up, slacktest.Shown(ubs))
	}
	if b, _ := slacktest.Buttons(ubs); len(b) != 0 {
		t.Errorf("the answered message still has buttons: %+v", b)
	}
	if n := countCalls(e.reach.slack.Calls(), "chat.postMessage"); n != 1 {
		t.Errorf("%d posts to Slack, want 1", n)
	}
}

// slackCall waits for the n-th call of method to the Slack fake.
func (e *env) slackCall(method string, n int, timeout time.Duration) slacktest.Call {
	e.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var seen []slacktest.Call
		for _, c := range e.reach.slack.Calls() {
			if c.Method == method {
				seen = append(seen, c)
			}
		}
		if len(seen) >= n {
			return seen[n-1]
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("no %s call #%d within %s; calls: %s", method, n, timeout, asJSON(e.reach.slack.Calls()))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func countCalls(cs []slacktest.Call, method string) int {
	n := 0
	for _, c := range cs {
		if c.Method == method {
			n++
		}
	}
	return n
}
