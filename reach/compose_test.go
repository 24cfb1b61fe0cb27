package reach

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"parley/askuser"
	"parley/runner"
	"parley/store"
)

func question(opts ...string) runner.AskPayload {
	q := askuser.Question{Question: "Which colour?"}
	for _, o := range opts {
		q.Options = append(q.Options, askuser.Option{Label: o})
	}
	return runner.AskPayload{Kind: "question", Question: &q}
}

// TestComposeActions: a phone gets Allow/Deny for a permission, Approve
// for a plan, the two options of a two-option question, else Open only;
// a viewer's message never answers.
func TestComposeActions(t *testing.T) {
	perm := runner.AskPayload{Kind: "permission", ToolName: "Bash", Input: json.RawMessage(`{"command":"rm -rf build"}`)}
	cases := []struct {
		name      string
		p         runner.AskPayload
		canAnswer bool
		want      string
	}{
		{"permission", perm, true, "allow:Allow deny:Deny"},
		{"plan", runner.AskPayload{Kind: "plan", Plan: "1. do it"}, true, "approve:Approve open:Open"},
		{"two options", question("Blue", "Green"), true, "choice:0:Blue choice:1:Green"},
		{"three options", question("Blue", "Green", "Red"), true, "open:Open"},
		{"free text", question(), true, "open:Open"},
		{"a viewer", perm, false, "open:Open"},
	}
	for _, c := range cases {
		m := Compose("https://p.example/", Ask{InputID: "in1", SessionID: "s1", Kind: c.p.Kind, Payload: c.p, Project: "Web"}, c.canAnswer)
		var got []string
		for _, a := range m.Actions {
			got = append(got, a.ID+":"+a.Title)
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("%s: actions %v, want %s", c.name, got, c.want)
		}
		if m.URL != "https://p.example/sessions/s1#ask-in1" {
			t.Errorf("%s: url %q", c.name, m.URL)
		}
		if (m.AnswerURL != "") != m.Answerable() {
			t.Errorf("%s: answer url %q with answerable %v", c.name, m.AnswerURL, m.Answerable())
		}
	}
	m := Compose("https://p.example", Ask{Kind: "permission", Payload: perm, Project: "Web"}, true)
	if m.Body != "rm -rf build" || !strings.Contains(m.Title, "Bash") {
		t.Errorf("permission shows %q / %q, want the command", m.Title, m.Body)
	}
}

// TestResponse: each action gives the answer the page would, and an
// action the ask does not offer is refused.
func TestResponse(t *testing.T) {
	r, err := Response(question("Blue", "Green"), "choice:1")
	if err != nil || len(r.Replies) != 1 || r.Replies[0].Selected[0] != "Green" {
		t.Errorf("choice:1 = %+v, %v", r, err)
	}
	if r, err := Response(runner.AskPayload{Kind: "permission"}, ActDeny); err != nil || !r.Decline {
		t.Errorf("deny = %+v, %v", r, err)
	}
	if r, err := Response(runner.AskPayload{Kind: "plan"}, ActApprove); err != nil || r.Decline || r.Mode != "default" {
		t.Errorf("approve = %+v, %v", r, err)
	}
	for _, bad := range []struct {
		p runner.AskPayload
		a string
	}{
		{question("Blue", "Green"), "choice:2"},
		{question("Blue", "Green"), "choice:-1"},
		{question("Blue", "Green", "Red"), "choice:0"},
		{runner.AskPayload{Kind: "permission"}, ActApprove},
		{runner.AskPayload{Kind: "plan"}, ActAllow},
		{runner.AskPayload{Kind: "permission"}, ActOpen},
	} {
		if _, err := Response(bad.p, bad.a); err == nil {
			t.Errorf("%s %q was taken", bad.p.Kind, bad.a)
		}
	}
}

// TestClip: a long body is cut on a rune boundary and marked.
func TestClip(t *testing.T) {
	s := strings.Repeat("é", 800) // 1,600 bytes
	got := clip(s, maxBody)
	if len(got) > maxBody || !strings.HasSuffix(got, "…") || !strings.HasPrefix(got, "éé") {
		t.Errorf("clip: %d bytes, suffix %q", len(got), got[len(got)-4:])
	}
}

// TestQuiet: quiet hours in the person's time zone, across midnight too.
func TestQuiet(t *testing.T) {
	at := func(s string) time.Time { v, _ := time.Parse(time.RFC3339, s); return v }
	cases := []struct {
		u    store.UserReach
		t    string
		want bool
	}{
		{store.UserReach{QuietFrom: "22:00", QuietTo: "07:00", TZ: "UTC"}, "2026-11-27T23:30:00Z", true},
		{store.UserReach{QuietFrom: "22:00", QuietTo: "07:00", TZ: "UTC"}, "2026-11-27T06:59:00Z", true},
		{store.UserReach{QuietFrom: "22:00", QuietTo: "07:00", TZ: "UTC"}, "2026-11-27T07:00:00Z", false},
		{store.UserReach{QuietFrom: "12:00", QuietTo: "13:00", TZ: "Europe/Berlin"}, "2026-11-27T11:30:00Z", true}, // 12:30 in Berlin
		{store.UserReach{QuietFrom: "12:00", QuietTo: "13:00", TZ: "Europe/Berlin"}, "2026-11-27T12:30:00Z", false},
		{store.UserReach{QuietFrom: "09:00", QuietTo: "09:00", TZ: "UTC"}, "2026-11-27T09:00:00Z", false},
		{store.UserReach{TZ: "UTC"}, "2026-11-27T09:00:00Z", false},
	}
	for _, c := range cases {
		if got := quiet(c.u, at(c.t)); got != c.want {
			t.Errorf("quiet(%+v, %s) = %v, want %v", c.u, c.t, got, c.want)
		}
	}
}
