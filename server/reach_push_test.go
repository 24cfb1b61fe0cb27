package server

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"parley/reach"
	"parley/runner/fakeapi"
)

// twoColours is an ask_user question a notification can answer: one
// single-choice question with two options.
func twoColours() map[string]any {
	return map[string]any{"question": "Which colour?", "options": []map[string]string{{"label": "Blue"}, {"label": "Green"}}}
}

// TestPushAnswersTheAsk: nobody is looking, so an ask reaches its
// starter's phone by Web Push (VAPID checked and the payload decrypted
// by a real RFC 8030 push service); the notification's action answers it
// through its single-use token, with no sign-in, the real CLI gets the
// answer, and the device then shows "answered by". The token works once.
func TestPushAnswersTheAsk(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{
		{Text: "Let me ask.", ToolName: askTool, ToolInput: twoColours()},
		{Text: "Green it is."},
	}, envOptions{reach: true, quiet: true})
	e.subscribe(e.user, "phone")
	sess := e.newSession()
	w := e.dial(sess.ID, 0)
	w.prompt("pick a colour")
	p, m := e.nextPush(60 * time.Second)
	if m.Type != reach.TypeAsk || m.Body != "Which colour?" || p.Urgency != "high" || m.Token == "" {
		t.Fatalf("push = %+v (urgency %q), want the ask with a token", m, p.Urgency)
	}
	if len(m.Actions) != 2 || m.Actions[1].ID != "choice:1" || m.Actions[1].Title != "Green" {
		t.Fatalf("actions = %+v, want Blue and Green", m.Actions)
	}
	if !strings.HasPrefix(m.URL, e.web.URL+"/sessions/"+sess.ID) {
		t.Errorf("url = %q, want the session's page", m.URL)
	}
	if code, text := e.answerWithToken(m, "choice:1"); code != http.StatusOK {
		t.Fatalf("answer from the notification: %d %q", code, text)
	}
	w.waitFor(60*time.Second, "Green it is.")
	if _, got, _, _ := e.fake.Requests()[1].LastToolResult(); !strings.Contains(got, "User selected: Green") {
		t.Errorf("the model got %q, want the answer", got)
	}
	if code, text := e.answerWithToken(m, "choice:0"); code != http.StatusForbidden {
		t.Errorf("the token used again: %d %q, want 403", code, text)
	}
	_, back := e.nextPush(30 * time.Second)
	if back.Type != reach.TypeAnswered || back.By != "you" || back.Via != "you's phone" || back.Token != "" {
		t.Errorf("take-back = %+v, want answered by you from you's phone", back)
	}
	in, _ := e.st.GetInput(t.Context(), m.InputID)
	if in.Status != "answered" || !strings.Contains(string(in.Answer), `"via": "you's phone"`) {
		t.Errorf("ask = %s %s, want answered via the phone", in.Status, in.Answer)
	}
}
