package slack_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"parley/reach"
	"parley/reach/slack"
	"parley/reach/slack/slacktest"
)

const token = "xoxb-parley-test"

func ask(kind string, actions ...reach.Action) reach.Message {
	return reach.Message{
		Type: reach.TypeAsk, InputID: "in-7", Kind: kind,
		Title: "Claude wants to run Bash", Body: "rm -rf build && make",
		Project: "atlas", Session: "Fix the build",
		URL:     "https://parley.test/sessions/3#ask-in-7",
		Actions: actions, Token: "secret-token", AnswerURL: "https://parley.test/reach/answer",
	}
}

func connect(t *testing.T) (*slacktest.Server, slack.Conn) {
	fake := slacktest.New(t, token)
	return fake, slack.Conn{Token: token, SigningSecret: "shh", Channel: "#parley", APIURL: fake.URL}
}

func lastBlocks(t *testing.T, fake *slacktest.Server, method string) (slacktest.Call, []slacktest.Block) {
	t.Helper()
	calls := fake.Calls()
	if len(calls) == 0 {
		t.Fatalf("no call to the fake")
	}
	c := calls[len(calls)-1]
	if c.Method != method || c.Error != "" {
		t.Fatalf("last call %s failed with %q, want %s ok", c.Method, c.Error, method)
	}
	bs, err := slacktest.ParseBlocks(c.Blocks)
	if err != nil {
		t.Fatalf("parse blocks %s: %v", c.Blocks, err)
	}
	return c, bs
}

func TestPostShowsTheAskWithItsButtons(t *testing.T) {
	fake, conn := connect(t)
	m := ask("permission", reach.Action{ID: "allow", Title: "Allow"}, reach.Action{ID: "deny", Title: "Deny"},
		reach.Action{ID: "open", Title: "Open"})
	channel, ts, err := slack.Post(t.Context(), conn, m)
	if err != nil {
		t.Fatal(err)
	}
	if channel != "CPARLEY" || ts == "" {
		t.Errorf("Post = %q, %q; want channel CPARLEY and a ts", channel, ts)
	}
	c, bs := lastBlocks(t, fake, "chat.postMessage")
	if c.Channel != "#parley" {
		t.Errorf("posted to %q, want #parley", c.Channel)
	}
	shown := slacktest.Shown(bs)
	for _, want := range []string{"Claude wants to run Bash", "rm -rf build &amp;&amp; make",
		"atlas · Fix the build · <https://parley.test/sessions/3#ask-in-7|Open in Parley>"} {
		if !strings.Contains(shown, want) {
			t.Errorf("the message lacks %q; it shows:\n%s", want, shown)
		}
	}
	if strings.Contains(string(c.Blocks)+c.Text, "secret-token") {
		t.Errorf("the answer token was posted to the channel")
	}
	buttons, blockIDs := slacktest.Buttons(bs)
	type button struct{ Value, Style, URL, Block string }
	var got []button
	for i, b := range buttons {
		got = append(got, button{b.Value, b.Style, b.URL, blockIDs[i]})
	}
	want := []button{{"allow", "primary", "", "parley-ask:in-7"}, {"deny", "danger", "", "parley-ask:in-7"},
		{"open", "", m.URL, "parley-ask:in-7"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("buttons (-want +got):\n%s", d)
	}
}

func TestPostStylesEachKindsButtons(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    reach.Message
		want []string // value=style
	}{
		{"plan", ask("plan", reach.Action{ID: "approve", Title: "Approve"}, reach.Action{ID: "open", Title: "Open"}),
			[]string{"approve=primary", "open="}},
		{"question", ask("question", reach.Action{ID: "choice:0", Title: "Yes"}, reach.Action{ID: "choice:1", Title: "No"}),
			[]string{"choice:0=", "choice:1="}},
		{"long titles", ask("question", reach.Action{ID: "choice:0", Title: strings.Repeat("a very long option ", 10)}),
			[]string{"choice:0="}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake, conn := connect(t)
			if _, _, err := slack.Post(t.Context(), conn, tc.m); err != nil {
				t.Fatal(err)
			}
			_, bs := lastBlocks(t, fake, "chat.postMessage")
			buttons, _ := slacktest.Buttons(bs)
			var got []string
			for _, b := range buttons {
				got = append(got, b.Value+"="+b.Style)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("buttons (-want +got):\n%s", d)
			}
		})
	}
}

// A body is the model's text: it must not ping the channel or hide a link.
func TestPostEscapesTheBody(t *testing.T) {
	fake, conn := connect(t)
	m := ask("question")
	m.Body = "<!channel> read <https://evil.test|the docs>"
	m.Session = "<@U0BOSS>"
	if _, _, err := slack.Post(t.Context(), conn, m); err != nil {
		t.Fatal(err)
	}
	c, bs := lastBlocks(t, fake, "chat.postMessage")
	shown := slacktest.Shown(bs)
	for _, bad := range []string{"<!channel>", "<https://evil.test", "<@U0BOSS>"} {
		if strings.Contains(shown, bad) || strings.Contains(c.Text, bad) {
			t.Errorf("the message carries %q unescaped:\n%s\ntext: %s", bad, shown, c.Text)
		}
	}
	if !strings.Contains(shown, "&lt;!channel&gt; read &lt;https://evil.test|the docs&gt;") {
		t.Errorf("the body is not shown escaped:\n%s", shown)
	}
}

func TestPostWithAWrongTokenFails(t *testing.T) {
	_, conn := connect(t)
	conn.Token = "xoxb-stolen"
	if _, _, err := slack.Post(t.Context(), conn, ask("question")); err == nil || !strings.Contains(err.Error(), "invalid_auth") {
		t.Errorf("Post with a wrong token: %v, want invalid_auth", err)
	}
}

func TestUpdateShowsWhoAnsweredAndKeepsTheQuestion(t *testing.T) {
	fake, conn := connect(t)
	channel, ts, err := slack.Post(t.Context(), conn, ask("permission", reach.Action{ID: "allow", Title: "Allow"}))
	if err != nil {
		t.Fatal(err)
	}
	done := ask("permission")
	done.Type, done.By, done.Via = reach.TypeAnswered, "Ann <ann@x>", "Slack"
	if err := slack.Update(t.Context(), conn, channel, ts, done); err != nil {
		t.Fatal(err)
	}
	c, bs := lastBlocks(t, fake, "chat.update")
	if c.Channel != channel || c.TS != ts {
		t.Errorf("updated %s/%s, want %s/%s", c.Channel, c.TS, channel, ts)
	}
	if buttons, _ := slacktest.Buttons(bs); len(buttons) != 0 {
		t.Errorf("the answered message still has buttons: %+v", buttons)
	}
	shown := slacktest.Shown(bs)
	for _, want := range []string{"rm -rf build &amp;&amp; make", "Answered by Ann &lt;ann@x&gt; (Slack)"} {
		if !strings.Contains(shown, want) {
			t.Errorf("the answered message lacks %q; it shows:\n%s", want, shown)
		}
	}
}

func TestUpdateOfAnUnknownMessageFails(t *testing.T) {
	_, conn := connect(t)
	done := ask("permission")
	done.Type = reach.TypeAnswered
	if err := slack.Update(t.Context(), conn, "CPARLEY", "1.2", done); err == nil || !strings.Contains(err.Error(), "message_not_found") {
		t.Errorf("Update of a message never posted: %v, want message_not_found", err)
	}
}

func TestEmailOf(t *testing.T) {
	fake, conn := connect(t)
	fake.AddUser("U0ANN", "ann@example.com")
	fake.AddUser("U0NOSCOPE", "")
	for _, tc := range []struct{ user, want, wantErr string }{
		{"U0ANN", "ann@example.com", ""},
		{"U0STRANGER", "", "user_not_found"},
		{"U0NOSCOPE", "", "users:read.email"},
	} {
		got, err := slack.EmailOf(t.Context(), conn, tc.user)
		if got != tc.want || (tc.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("EmailOf(%s) = %q, %v; want %q, error with %q", tc.user, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestCheckNamesTheWorkspace(t *testing.T) {
	_, conn := connect(t)
	team, err := slack.Check(t.Context(), conn)
	if err != nil || team != slacktest.TeamID {
		t.Errorf("Check = %q, %v; want %s", team, err, slacktest.TeamID)
	}
	conn.Token = ""
	if _, err := slack.Check(t.Context(), conn); err == nil {
		t.Errorf("Check without a token passed")
	}
}
